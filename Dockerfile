# syntax=docker/dockerfile:1
# ao in a container: the single executable on a slim Debian, data on a volume.
#   docker build -t ao .
#   docker run -d -p 7070:7070 -v ao-data:/data \
#     -e AO_ADMIN_EMAIL=admin@example.com -e AO_ADMIN_PASSWORD=change-me-now ao

# Build stage: Node's npm installs the locked dependencies, Bun among them (npm package
# "bun", whose postinstall links the real binary), and Bun compiles dist/ao.
FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && ./dist/ao version

# Runtime stage: only the executable. It embeds Bun, the code and the migrations, and it
# reads no bunfig.toml or .env, so nothing else from the build is needed.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 ao \
 && useradd --system --uid 10001 --gid ao --home-dir /data --no-create-home --shell /usr/sbin/nologin ao \
 && mkdir -p /data \
 && chown ao:ao /data \
 && chmod 0700 /data
COPY --from=build /src/dist/ao /usr/local/bin/ao
# MIMALLOC_PURGE_HOLES=0: the allocator setting `ao serve` would otherwise start itself again to
# apply (src/server/allocator.ts), set here so the container starts once.
ENV AO_DATA_DIR=/data \
    AO_HOST=0.0.0.0 \
    AO_PORT=7070 \
    MIMALLOC_PURGE_HOLES=0
# A new named volume starts with the image's /data, so it is owned by ao (uid 10001);
# a bind-mounted host directory must be writable by uid 10001.
VOLUME ["/data"]
WORKDIR /data
USER ao:ao
EXPOSE 7070
# `ao healthcheck` asks http://127.0.0.1:$AO_PORT/api/v1/health: set the port with AO_PORT, not --port.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 CMD ["/usr/local/bin/ao", "healthcheck"]
# ao handles SIGTERM itself (drains, checkpoints the database, exits 0), so it can run as PID 1.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/ao"]
CMD ["serve"]
