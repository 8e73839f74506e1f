# The Panoptes image: the `panoptes` CLI as entrypoint (manifests/ pass the subcommand).
#   docker build -t panoptes .
FROM node:20-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 builds from source when no prebuilt binary is reachable.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY bin ./bin
COPY cli ./cli
COPY apiserver ./apiserver
COPY storage ./storage
COPY synchro ./synchro
COPY kube ./kube
COPY lib ./lib
COPY hack ./hack

FROM node:20-bookworm-slim
WORKDIR /app
COPY --from=build /app /app
USER node
ENTRYPOINT ["node", "/app/bin/panoptes.mjs"]
