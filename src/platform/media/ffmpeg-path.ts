import { spawnSync } from 'node:child_process';
import { accessSync, chmodSync, constants, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

// Packages are looked up at run time: `ffmpeg-static` is optional (its install downloads, so it is usually
// absent), and the installer packages throw on platforms they do not ship.
const requireFromHere = createRequire(import.meta.url);

/** The ffmpeg and ffprobe binaries to spawn (absolute paths, or a bare name found on PATH). */
export interface FfmpegBinaries {
  ffmpeg: string;
  ffprobe: string;
}

/** Oldest ffmpeg release accepted from PATH: older builds lack filters the export pipeline relies on. */
const MIN_SYSTEM_MAJOR = 5;
/** Git snapshot builds print `N-<count>-g<hash>`, where the count depends on the clone: their copyright year says more. 5.0 came out in January 2022. */
const MIN_SNAPSHOT_YEAR = 2022;

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** A binary path exported by an npm package (`ffmpeg-static` exports a string, the installers `{ path }`). */
function packageBinary(name: string): string | undefined {
  try {
    const exported: unknown = requireFromHere(name);
    const path =
      typeof exported === 'string'
        ? exported
        : typeof exported === 'object' && exported !== null && 'path' in exported
          ? (exported as { path: unknown }).path
          : undefined;
    return typeof path === 'string' && (isExecutable(path) || madeExecutable(path)) ? path : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The installer packages make their binary executable in an install script, which a production install
 * (`npm ci --omit=dev --ignore-scripts`) skips: do it here when we own the file (an image built as root and run
 * as another user does it at build time instead).
 */
function madeExecutable(path: string): boolean {
  try {
    chmodSync(path, 0o755);
    return isExecutable(path);
  } catch {
    return false;
  }
}

/** True when the `-version` banner names a release (or snapshot) at least as new as ffmpeg 5. */
export function isRecentFfmpegVersion(banner: string): boolean {
  const version = /\bversion\s+(\S+)/.exec(banner)?.[1];
  if (!version) return false;
  const release = /^n?(\d+)\.\d+/.exec(version);
  if (release) return Number(release[1]) >= MIN_SYSTEM_MAJOR;
  if (!/^N-\d+-/.test(version)) return false;
  const year = /copyright \(c\) \d{4}-(\d{4})/i.exec(banner)?.[1];
  return Number(year) >= MIN_SNAPSHOT_YEAR;
}

const systemChecks = new Map<string, boolean>();

/** Whether `command` (looked up on PATH by spawn itself) runs and is recent enough; cached per process. */
function recentOnPath(command: string): boolean {
  let ok = systemChecks.get(command);
  if (ok === undefined) {
    const run = spawnSync(command, ['-version'], {
      encoding: 'utf8',
      timeout: 10_000,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    ok = run.status === 0 && isRecentFfmpegVersion(run.stdout ?? '');
    systemChecks.set(command, ok);
  }
  return ok;
}

function resolveProbe(explicitFfmpeg: string | undefined): string | undefined {
  // A directory given for ffmpeg usually holds its ffprobe too (static builds ship both).
  if (explicitFfmpeg?.includes('/')) {
    const sibling = join(dirname(explicitFfmpeg), 'ffprobe');
    if (existsSync(sibling) && isExecutable(sibling)) return sibling;
  }
  if (recentOnPath('ffprobe')) return 'ffprobe';
  return packageBinary('@ffprobe-installer/ffprobe');
}

/**
 * Order (docs/architecture.md, Dependencies): explicit path → `ffmpeg-static` if its binary exists → system
 * ffmpeg >= 5 on PATH → @ffmpeg-installer/@ffprobe-installer.
 */
export function resolveFfmpeg(overrides: { ffmpegPath?: string; ffprobePath?: string } = {}): FfmpegBinaries {
  const ffmpeg =
    overrides.ffmpegPath ||
    packageBinary('ffmpeg-static') ||
    (recentOnPath('ffmpeg') ? 'ffmpeg' : undefined) ||
    packageBinary('@ffmpeg-installer/ffmpeg');
  if (!ffmpeg) throw new Error('ffmpeg not found: set FFMPEG_PATH or install ffmpeg 5 or newer');
  const ffprobe = overrides.ffprobePath || resolveProbe(overrides.ffmpegPath);
  if (!ffprobe) throw new Error('ffprobe not found: set FFPROBE_PATH or install ffmpeg 5 or newer');
  return { ffmpeg, ffprobe };
}

/** Path of the TTF font used by drawtext (from the npm package `dejavu-fonts-ttf`, never system fonts). */
export function fontFile(): string {
  const path = join(
    dirname(requireFromHere.resolve('dejavu-fonts-ttf/package.json')),
    'ttf',
    'DejaVuSans.ttf',
  );
  if (!existsSync(path)) throw new Error(`font not found at ${path}: reinstall dejavu-fonts-ttf`);
  return path;
}
