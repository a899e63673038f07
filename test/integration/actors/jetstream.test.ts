import { before, after, describe } from 'node:test';
import { startNats, skipWithoutNats, type TestNats } from '../../helpers/nats.ts';
import { actorContract } from './contract.ts';

describe('JetStream transport', { skip: skipWithoutNats() }, () => {
  let nats: TestNats;
  before(async () => (nats = await startNats()));
  after(async () => nats?.stop());
  actorContract('jetstream', () => nats.url);
});
