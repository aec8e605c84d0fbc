import Config

config :socket_api,
  # Loopback only: this is a teaching service, never exposed.
  ip: {127, 0, 0, 1},
  port: 4000,
  acceptors: 4,
  # A WebSocket message (after reassembly) larger than this is closed with 1009.
  max_message_bytes: 65_536,
  # How long a client may take to send its HTTP request head.
  handshake_timeout_ms: 5_000,
  max_topics_per_socket: 8,
  # A channel idle this long hibernates (a full sweep, a compacted heap): Phoenix's
  # channels' default (`use Phoenix.Channel, hibernate_after: 15_000`).
  channel_hibernate_after_ms: 15_000,
  # The simulated upstream services behind a `list_items` request: bytes each one
  # returns per item, and how long each batch call takes.
  upstreams: [profiles: 1_024, activity: 4_096, attachments: 3_072],
  upstream_latency_ms: 5

import_config "#{config_env()}.exs"
