import pino, { type Logger, type DestinationStream } from 'pino';

// API keys and webhook secrets have fixed shapes, so they are scrubbed from every line wherever they appear
// (messages, error stacks, echoed URLs), not only from known fields; the admin token is scrubbed literally.
const SECRET_SHAPES = /\b(mf_|whsec_)[0-9A-Za-z_-]{8,}/g;

/** Replaces every secret in a log line with a marker that keeps the kind of secret visible. */
export function scrubSecrets(line: string, literals: readonly string[] = []): string {
  let out = line.replace(SECRET_SHAPES, (_match, kind: string) => `${kind}[REDACTED]`);
  for (const literal of literals) if (literal) out = out.split(literal).join('[REDACTED]');
  return out;
}

/** The root logger: JSON lines on stdout, secrets redacted by field and by shape. */
export function createLogger(options: {
  level: string;
  nodeId: string;
  secrets?: readonly string[];
  destination?: DestinationStream;
}): Logger {
  const secrets = options.secrets ?? [];
  return pino(
    {
      level: options.level,
      base: { node_id: options.nodeId },
      redact: {
        paths: [
          'authorization',
          '*.authorization',
          'headers.authorization',
          'api_key',
          '*.api_key',
          'secret',
          '*.secret',
        ],
        censor: '[REDACTED]',
      },
      hooks: { streamWrite: (line) => scrubSecrets(line, secrets) },
    },
    options.destination ?? pino.destination({ dest: 1, sync: false }),
  );
}

export type { Logger };
