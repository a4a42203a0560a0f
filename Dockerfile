# One image for every service of the scaled-out deployment (docker-compose.yml):
# relay (webhooks), dashboard, Celery workers. The C++ backend is built for torch 2.13.
FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends g++ git curl && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . /app
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu \
 && pip install --no-cache-dir ninja gunicorn -e . \
 && pip install --no-cache-dir --no-build-isolation -e backend
ENV RELAY_DATA_DIR=/data
VOLUME /data
