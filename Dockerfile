# syntax=docker/dockerfile:1
# The edge-operator image: one executable with every subcommand (serve, watch,
# certs, migrate, finalizer, ...). Built in stages so the runtime holds only the
# compiled JavaScript and the production dependencies, and runs as non-root.

ARG NODE_IMAGE=node:20-slim

# Compile TypeScript with the full (dev) dependency set.
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
# Only the shipped code: unit tests beside it import test/ fixtures that are not copied in.
RUN printf '{"extends":"./tsconfig.json","include":["src/**/*.ts"],"exclude":["src/**/*.test.ts"]}' > tsconfig.image.json \
 && npx tsc -p tsconfig.image.json

# Production dependencies only, resolved from the same lockfile.
FROM ${NODE_IMAGE} AS deps
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force --loglevel=error

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    NODE_OPTIONS=--enable-source-maps
# The commit the image is built from, for `edge-operator version` (scripts/image.sh passes it).
ARG COMMIT=unknown
ENV EDGE_OPERATOR_COMMIT=${COMMIT}
WORKDIR /app
COPY --from=deps /src/node_modules ./node_modules
COPY --from=build /src/dist/src ./dist/src
COPY package.json ./
# A numeric user, so that the kubelet can check runAsNonRoot; the chart runs as the same ids.
USER 65532:65532
ENTRYPOINT ["node", "/app/dist/src/cli/main.js"]
CMD ["--help"]
