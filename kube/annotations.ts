// Annotations of Kubernetes itself that Panoptes reads or strips.

/** kubectl apply's record of the last applied object (carries whatever the user applied, credentials included). */
export const lastAppliedAnnotation = 'kubectl.kubernetes.io/last-applied-configuration';
