import type { ProjectsRepository } from '../../actors/index.ts';
import type { ApiKeysRepository } from '../accounts/index.ts';

/** What a recheck looks at in each open socket. */
export interface RecheckedSocket {
  projectId: string;
  keyId: string;
  /** The dashboard token the socket was opened with, when a session's. */
  sessionToken?: string;
}

/** Why a recheck closes sockets. */
export type RecheckVerdict = 'keyRevoked' | 'sessionEnded' | 'projectDeleted';

/**
 * The periodic check of open sockets: closes sockets of revoked keys, of ended dashboard tokens and of deleted
 * projects (one lookup per key, per token and per project). A dashboard session is no API key: its sockets are
 * checked by their token.
 */
export function createSocketRecheck<Socket extends RecheckedSocket>(deps: {
  keys: Pick<ApiKeysRepository, 'get'>;
  /** Checks a dashboard token again; without it, sockets of tokens are not rechecked. */
  sessionTokens?: { authenticateToken(token: string): Promise<unknown> };
  projects: Pick<ProjectsRepository, 'get'>;
  /** The open sockets. */
  open(): Socket[];
  /** Closes the sockets that pass `test`, for `why`. */
  close(test: (socket: Socket) => boolean, why: RecheckVerdict): void;
}): () => Promise<void> {
  const { close } = deps;
  /** Projects the last recheck found deleted while sockets still watched them. */
  const gone = new Set<string>();
  return async () => {
    const states = deps.open();
    const keyIds = new Set(states.filter((state) => !state.sessionToken).map((state) => state.keyId));
    const tokens = new Set(states.map((state) => state.sessionToken).filter((token) => token !== undefined));
    const projectIds = new Set(states.map((state) => state.projectId));
    for (const keyId of keyIds) {
      const key = await deps.keys.get(keyId);
      if (!key || key.revoked_at)
        close((state) => state.keyId === keyId && !state.sessionToken, 'keyRevoked');
    }
    for (const token of deps.sessionTokens ? tokens : []) {
      if (!(await deps.sessionTokens!.authenticateToken(token))) {
        close((state) => state.sessionToken === token, 'sessionEnded');
      }
    }
    // A deletion announces itself (`project.deleted`, then the close); the recheck only catches an announcement
    // that never came. The document goes before its event is published, so a project seen gone is closed at
    // the next recheck that still finds it gone: its sockets get the event first whenever it does come.
    const goneBefore = new Set(gone);
    gone.clear();
    for (const projectId of projectIds) {
      if (await deps.projects.get(projectId)) continue;
      if (goneBefore.has(projectId)) close((state) => state.projectId === projectId, 'projectDeleted');
      else gone.add(projectId);
    }
  };
}
