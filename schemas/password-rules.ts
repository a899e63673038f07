/** Account passwords (docs/accounts.md, Passwords): at least 10 characters; the cap keeps bodies small. */
export const PASSWORD_MIN_LENGTH = 10;
export const PASSWORD_MAX_LENGTH = 1024;
