# Looptrace API / worker image. One image, two roles (LOOPTRACE_ROLE=api|worker), see docker-compose.yml.
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# npm install, not npm ci: the lock omits other platforms' optional chDB packages (see scripts/test.sh).
RUN npm install --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY web ./web
# Build with the dev dependencies, then drop them so the runtime stage copies production ones only.
RUN npm run build && npm run web:build && npm prune --omit=dev

FROM node:24-slim
ENV NODE_ENV=production LOOPTRACE_DATA_DIR=/app/data PORT=8080
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The web dashboard, served by the API at /.
COPY --from=build /app/web/dist ./web/dist
# Migration files are read at start-up (the server migrates, serialised by a Postgres advisory lock).
COPY sql ./sql
COPY clickhouse ./clickhouse
RUN mkdir -p /app/data/audit-anchors && chown -R node:node /app/data
USER node
EXPOSE 8080 4317
CMD ["node", "dist/server.js"]
