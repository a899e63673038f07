import { connect, type NatsConnection } from '@nats-io/transport-node';

/** A NATS connection with its live health. */
export interface NatsLink {
  connection: NatsConnection;
  health(): 'up' | 'down';
  close(): Promise<void>;
}

/** Connects to the NATS cluster (cluster mode), reconnecting for as long as the process lives. */
export async function connectNats(servers: string[], name: string): Promise<NatsLink> {
  const connection = await connect({ servers, name, maxReconnectAttempts: -1, reconnectTimeWait: 500 });
  let connected = true;
  void (async () => {
    for await (const status of connection.status()) {
      if (status.type === 'disconnect') connected = false;
      if (status.type === 'reconnect') connected = true;
    }
  })();
  return {
    connection,
    health: () => (connected && !connection.isClosed() ? 'up' : 'down'),
    close: () => connection.drain(),
  };
}
