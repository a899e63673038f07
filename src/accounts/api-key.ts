import { createHash, timingSafeEqual } from 'node:crypto';
import { randomBase62 } from '../platform/index.ts';

const KEY_PATTERN = /^mf_[0-9A-Za-z]{32,128}$/;
const SECRET_LENGTH = 43; // 43 base62 characters ≈ 256 bits

/** A new API key in its only plaintext appearance, with what is stored about it. */
export function generateApiKey(): { apiKey: string; hash: string; prefix: string } {
  const apiKey = `mf_${randomBase62(SECRET_LENGTH)}`;
  return { apiKey, hash: hashApiKey(apiKey), prefix: displayPrefix(apiKey) };
}

/** True when the string has the shape of one of our keys; anything else is refused without a lookup. */
export function isWellFormedApiKey(candidate: string): boolean {
  return KEY_PATTERN.test(candidate);
}

/** SHA-256 hex of the key: keys have 256 bits of entropy, so a fast hash is enough to store them. */
export function hashApiKey(apiKey: string): string {
  return hashSecret(apiKey);
}

/**
 * SHA-256 hex of a random secret (keys, OAuth tokens and codes, session cookies): each carries 256 bits of
 * entropy, so a fast hash is enough to store it — nothing can be guessed from the hash.
 */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** A new random secret with its prefix (`mfat_`, `mfs_`…), in its only plaintext appearance, and its hash. */
export function generateSecret(prefix: string): { secret: string; hash: string } {
  const secret = `${prefix}${randomBase62(SECRET_LENGTH)}`;
  return { secret, hash: hashSecret(secret) };
}

/** The short, non-secret part shown in listings (`mf_AbC123`). */
export function displayPrefix(apiKey: string): string {
  return apiKey.slice(0, 9);
}

/** Compares two secrets in constant time (hashing first makes the lengths equal). */
export function secretsEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}
