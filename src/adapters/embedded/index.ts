export { startEmbeddedMongo, type EmbeddedMongo } from './jongodb.ts';
