# syntax=docker/dockerfile:1
# The OPI server image: the API by default; the same image runs the workers and the simulated cluster:
#   docker build -t opi-server .
#   docker run -e REDIS_URL=redis://redis:6379 -e OPI_API_TOKENS=... -p 8080:8080 opi-server
#   docker run -e REDIS_URL=... -e KUBECONFIG=/kube/config -v ~/.kube:/kube:ro opi-server node apps/worker/dist/main.js
# See docs/deploy.md. test/integration/deploy-artifacts/dockerfile.test.ts checks this file (no engine is needed).

ARG NODE_IMAGE=node:20-bookworm-slim

# --- build: compile every workspace, then drop the dev dependencies -----------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /src
# The whole tree (minus .dockerignore): npm ci needs every workspace's package.json to link them.
COPY . .
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund
RUN npm run build
RUN npm prune --omit=dev --no-audit --no-fund
# What runs: the manifests, the pruned node_modules (workspace links included) and each workspace's
# compiled JavaScript (and the protos a workspace loads at run time), without the compiled tests, source
# maps and typings.
RUN mkdir /out \
 && cp -a package.json node_modules /out/ \
 && for ws in libs/* apps/*; do mkdir -p "/out/$ws" && cp -a "$ws/package.json" "$ws/dist" "/out/$ws/" \
      && if [ -d "$ws/proto" ]; then cp -a "$ws/proto" "/out/$ws/"; fi; done \
 && find /out/libs /out/apps \( -name '*.test.js' -o -name '*.fixture.js' -o -name '*.map' \
      -o -name '*.d.ts' -o -name '.tsbuildinfo' \) -delete

# --- runtime ------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080
WORKDIR /app
# Owned by root and read-only for the app: the process cannot change its own code.
COPY --from=build /out/ ./
# /shared: where docker-compose.yml's simulated cluster writes the kubeconfig the workers read; a fresh
# named volume takes this directory's owner, so the non-root user can write there.
RUN mkdir /shared && chown 1000:1000 /shared
# The base image's `node` user, numeric so that Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 8080 9090
CMD ["node", "apps/api/dist/main.js"]
