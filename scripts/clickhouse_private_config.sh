#!/usr/bin/env bash
# Writes the configuration of a private ClickHouse server (18.16 and later):
# DIR/config.xml and DIR/users.xml, its data, logs and temporary files under
# DIR, listening on 127.0.0.1 only at HTTP_PORT and TCP_PORT, one user
# `default` without a password, from 127.0.0.1 only. Start it with
#   clickhouse-server --config-file=DIR/config.xml
#
# usage: scripts/clickhouse_private_config.sh DIR HTTP_PORT TCP_PORT
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 DIR HTTP_PORT TCP_PORT" >&2; exit 2; }
dir="$(cd "$1" && pwd)"
mkdir -p "$dir/data" "$dir/tmp" "$dir/user_files"
cat >"$dir/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$dir/server.log</log><errorlog>$dir/error.log</errorlog><console>0</console></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>$2</http_port>
  <tcp_port>$3</tcp_port>
  <path>$dir/data/</path>
  <tmp_path>$dir/tmp/</tmp_path>
  <user_files_path>$dir/user_files/</user_files_path>
  <users_config>users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>5368709120</mark_cache_size>
</yandex>
EOF
cat >"$dir/users.xml" <<'EOF'
<?xml version="1.0"?>
<yandex>
  <profiles><default></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
EOF
