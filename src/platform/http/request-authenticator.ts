import type { KeyPrincipal } from './principal.ts';

/** Resolves `Authorization` headers to principals (API keys) or checks the admin token (port: accounts). */
export interface RequestAuthenticator {
  /**
   * The key's principal — synchronously when the key is in memory (the hot path), else after one lookup;
   * 401 with the documented messages otherwise (docs/errors.md).
   */
  authenticateKey(
    authorization: string | undefined,
    acceptsOAuth?: boolean,
  ): KeyPrincipal | Promise<KeyPrincipal>;
  /** Throws 401 unless the header carries the admin token. */
  authenticateAdmin(authorization: string | undefined): void;
}
