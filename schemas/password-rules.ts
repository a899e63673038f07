/** Passwords of accounts (CONTRACT §11): at least 10 characters; the cap keeps request bodies small. */
export const PASSWORD_MIN_LENGTH = 10;
export const PASSWORD_MAX_LENGTH = 1024;
