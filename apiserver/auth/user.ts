// Who a request is from: the user an authenticator (authn.ts, request-header.ts) or the proxy's impersonation names.
export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra: Record<string, string[]>;
}
