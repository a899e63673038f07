import { actorContract } from './contract.ts';

actorContract('in-process', () => undefined);
