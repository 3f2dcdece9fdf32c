# The ktune image: ktuned (any role), ktune-runner, the `ktune` command, the kernels, the replay
# datasets, the dashboard and gcc, so that it tunes on the CPU as well as serving the API.
#   docker build -t ktune .
# Multi-stage build on Debian 12. The CUDA workers' image is deploy/Dockerfile.cuda.
FROM debian:12 AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
      cmake make gcc pkg-config libmicrohttpd-dev libjansson-dev libpq-dev zlib1g-dev libcmocka-dev \
      libopenblas-dev libxgboost-dev libcurl4-openssl-dev npm \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake cmake
COPY service service
COPY sql sql
COPY tests tests
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    && cmake --build build -j"$(nproc)" --target ktuned ktune-runner ktune
# The dashboard's Chart.js, pinned by web/package-lock.json (no build step: served as files).
COPY web web
RUN cd web && npm ci --omit=dev --no-audit --no-fund

FROM debian:12
LABEL org.opencontainers.image.title="ktune" \
      org.opencontainers.image.description="ktune: kernel auto-tuning service (API, CPU worker, CLI)"
# gcc + libc6-dev: ktune-runner compiles CPU kernels with `cc -std=gnu11 -O3 -march=native -fPIC
# -shared` (service/runner/cpu_compile.c) and dlopens them; libopenblas0 is the runner's reference
# GEMM; postgresql for the embedded database when no KTUNE_DATABASE_URL is given; libcurl for `ktune`;
# dataset-fashion-mnist for the Fisher Potential legality check of neural problems (issue 14).
RUN apt-get update && apt-get install -y --no-install-recommends \
      libmicrohttpd12 libjansson4 libpq5 zlib1g libopenblas0 libxgboost0 libcurl4 \
      gcc libc6-dev postgresql ca-certificates dataset-fashion-mnist \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/ktune
# bin/ beside kernels/, datasets/, accel/, networks/ and web/: ktuned's defaults (<install>/kernels,
# <install>/datasets, <install>/accel/devices.json, <install>/networks, <install>/web, <dir of
# ktuned>/ktune-runner)
# find them with no flag.
COPY --from=build /src/build/ktuned bin/ktuned
COPY --from=build /src/build/ktune-runner bin/ktune-runner
COPY --from=build /src/build/ktune bin/ktune
COPY --from=build /src/web web
COPY datasets datasets
COPY kernels kernels
COPY accel accel
COPY networks networks
RUN ln -s /opt/ktune/bin/ktune /usr/local/bin/ktune
# With KTUNE_DATABASE_URL unset, ktuned runs an embedded PostgreSQL in /var/lib/ktune as user postgres.
RUN mkdir -p /var/lib/ktune && chmod 755 /var/lib/ktune
# Listening on every address needs a token: docker run -e KTUNE_API_TOKEN=<secret> ... (without one
# ktuned refuses to start on 0.0.0.0 and says so; --allow-insecure-listen overrides, for a private network).
ENV KTUNE_LISTEN=0.0.0.0:8080 KTUNE_DATA_DIR=/var/lib/ktune
EXPOSE 8080
VOLUME /var/lib/ktune
ENTRYPOINT ["/opt/ktune/bin/ktuned"]
