# The Panoptes image: the `panoptes` CLI as entrypoint (manifests/ pass the subcommand).
#   docker build -t panoptes .
FROM node:20-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 builds from source when no prebuilt binary is reachable.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY cli ./cli
COPY apiserver ./apiserver
COPY storage ./storage
COPY synchro ./synchro
COPY kube ./kube
COPY lib ./lib
COPY hack ./hack
# Compiled JavaScript in dist/ (bin/panoptes.mjs runs it): no TypeScript compiler in the
# running processes. Then the development dependencies go.
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim
WORKDIR /app
# V8's young generation: semi-spaces of 8 MiB instead of 16 (16 MiB committed instead of 32, which
# an idle process keeps); same CPU time in bench:memory. Override with the Pod's NODE_OPTIONS.
ENV NODE_OPTIONS=--max-semi-space-size=8
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/bin ./bin
COPY --from=build /app/dist ./dist
USER node
ENTRYPOINT ["node", "/app/bin/panoptes.mjs"]
