// Test TLS material made with the openssl CLI: a CA the service is told to trust (NODE_EXTRA_CA_CERTS), a
// server certificate it signed, and an unrelated self-signed certificate that must never be trusted.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A server certificate and key (PEM text and file paths). */
export interface ServerCert {
  certPath: string;
  keyPath: string;
  cert: string;
  key: string;
}

/** A test CA and a server certificate it signed for localhost, 127.0.0.1 and ::1. */
export interface TestCa extends ServerCert {
  dir: string;
  caPath: string;
  ca: string;
  /** Deletes the temporary folder. */
  remove(): void;
}

/** A running HTTPS server on 127.0.0.1. */
export interface TestHttpsServer {
  url: string;
  port: number;
  server: Server;
  stop(): Promise<void>;
}

const SERVER_NAMES = 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1';
const SERVER_EXTENSIONS = [SERVER_NAMES, 'basicConstraints=CA:FALSE', 'extendedKeyUsage=serverAuth'];
const CA_EXTENSIONS = ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign,cRLSign'];
// P-256 keys: generated in milliseconds, unlike RSA.
const NEW_KEY = words('-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes');

/** Runs the openssl CLI in `cwd` (a Debian default; its errors surface through execFileSync). */
function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A self-signed certificate request: `-addext` once per extension. */
function selfSigned(name: string, subject: string, extensions: string[]): string[] {
  const added = extensions.flatMap((extension) => ['-addext', extension]);
  return [
    ...words(`req -x509 -days 2 -keyout ${name}.key -out ${name}.pem`),
    ...NEW_KEY,
    '-subj',
    subject,
    ...added,
  ];
}

/** Writes a fresh CA and a server certificate signed by it into a temporary folder. */
export function createTestCa(): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'mf-test-ca-'));
  openssl(selfSigned('ca', '/CN=MediaForge Test CA', CA_EXTENSIONS), dir);
  openssl([...words('req -keyout server.key -out server.csr -subj /CN=localhost'), ...NEW_KEY], dir);
  writeFileSync(join(dir, 'server.ext'), SERVER_EXTENSIONS.join('\n'));
  const sign = `x509 -req -in server.csr -CA ca.pem -CAkey ca.key -days 2 -sha256 -extfile server.ext`;
  openssl([...words(sign), '-set_serial', randomSerial(), '-out', 'server.pem'], dir);
  const caPath = join(dir, 'ca.pem');
  return {
    dir,
    caPath,
    ca: readFileSync(caPath, 'utf8'),
    ...readPair(dir, 'server'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A self-signed certificate for the same names, signed by no CA anyone trusts, written into `dir`. */
export function createSelfSignedCert(dir: string): ServerCert {
  openssl(selfSigned('self', '/CN=localhost', SERVER_EXTENSIONS), dir);
  return readPair(dir, 'self');
}

function readPair(dir: string, name: string): ServerCert {
  const certPath = join(dir, `${name}.pem`);
  const keyPath = join(dir, `${name}.key`);
  return { certPath, keyPath, cert: readFileSync(certPath, 'utf8'), key: readFileSync(keyPath, 'utf8') };
}

function words(text: string): string[] {
  return text.split(' ');
}

/** Starts an HTTPS server on 127.0.0.1 with a random port; `stop()` also cuts connections still open. */
export async function startHttpsServer(
  handler: RequestListener,
  tls: { cert: string; key: string },
): Promise<TestHttpsServer> {
  const server = createServer({ cert: tls.cert, key: tls.key }, handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    port,
    server,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function randomSerial(): string {
  return `0x${Array.from({ length: 16 }, () => Math.floor(Math.random() * 16).toString(16)).join('')}1`;
}
