import * as zmq from 'zeromq';
import { clientOptions, type ClientSecurity } from './curve';
import { MAX_MESSAGE_BYTES, SerialSender, decodedMessages, type Decoded } from './frames';

/** Publishes on a pubsub bridge's `in`. Messages sent before the connection is up are lost. */
export class Publisher {
  private readonly out: SerialSender;

  constructor(
    readonly address: string,
    security?: ClientSecurity,
  ) {
    const sock = new zmq.Publisher({
      linger: 1_000,
      maxMessageSize: MAX_MESSAGE_BYTES,
      ...clientOptions(security),
    });
    sock.connect(address);
    this.out = new SerialSender(sock);
  }

  publish(value: unknown): Promise<void> {
    return this.out.send(value);
  }

  close(): Promise<void> {
    return this.out.close();
  }
}

/** Subscribes to everything on a pubsub bridge's `out`. */
export class Subscriber {
  private readonly sock: zmq.Subscriber;

  constructor(
    readonly address: string,
    security?: ClientSecurity,
  ) {
    this.sock = new zmq.Subscriber({
      linger: 0,
      maxMessageSize: MAX_MESSAGE_BYTES,
      ...clientOptions(security),
    });
    this.sock.connect(address);
    this.sock.subscribe();
  }

  messages(): AsyncGenerator<Decoded> {
    return decodedMessages(this.sock);
  }

  close(): void {
    this.sock.close();
  }
}
