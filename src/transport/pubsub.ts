import * as zmq from 'zeromq';
import { clientOptions, type ClientSecurity } from './curve';
import {
  MAX_MESSAGE_BYTES,
  SerialSender,
  decodedMessages,
  moveConnection,
  type Decoded,
} from './frames';

/** Publishes on a pubsub bridge's `in`. Messages sent before the connection is up are lost. */
export class Publisher {
  private readonly out: SerialSender;
  private readonly sock: zmq.Publisher;

  constructor(
    private at: string,
    security?: ClientSecurity,
  ) {
    this.sock = new zmq.Publisher({
      linger: 1_000,
      maxMessageSize: MAX_MESSAGE_BYTES,
      ...clientOptions(security),
    });
    this.sock.connect(at);
    this.out = new SerialSender(this.sock);
  }

  get address(): string {
    return this.at;
  }

  /** Connects to `address` instead (see moveConnection). */
  move(address: string): void {
    this.at = moveConnection(this.sock, this.at, address);
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
    private at: string,
    security?: ClientSecurity,
  ) {
    this.sock = new zmq.Subscriber({
      linger: 0,
      maxMessageSize: MAX_MESSAGE_BYTES,
      ...clientOptions(security),
    });
    this.sock.connect(at);
    this.sock.subscribe();
  }

  get address(): string {
    return this.at;
  }

  /** Connects to `address` instead; the subscription is the socket's, and goes along. */
  move(address: string): void {
    this.at = moveConnection(this.sock, this.at, address);
  }

  messages(): AsyncGenerator<Decoded> {
    return decodedMessages(this.sock);
  }

  close(): void {
    this.sock.close();
  }
}
