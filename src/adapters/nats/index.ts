export { connectNats, type NatsLink } from './connect.ts';
