import { useEffect, useRef, useState } from 'preact/hooks';
import { dash, describeError } from '../api.ts';
import { formatDate } from '../format.ts';
import {
  DEFAULT_SCOPE,
  KEY_NAME_MAX,
  SCOPES,
  type ApiKey,
  type CreatedKey,
  type CreateKeyRequest,
  type KeyList,
  type Scope,
} from '../api-types.ts';
import { ErrorText, formValue, Link, Notice, useLoad, useTitle } from '../ui.tsx';

/** Keys newest first, whatever order the server lists them in. */
export function newestFirst(keys: ApiKey[]): ApiKey[] {
  return [...keys].sort((a, b) => b.created_at.localeCompare(a.created_at));
}

/** Copies text to the clipboard, falling back to selecting a field and `execCommand`. */
export async function copyText(text: string, field?: HTMLInputElement | null): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    if (!field) return false;
    field.select();
    return document.execCommand('copy');
  }
}

function NewKey(props: { created: CreatedKey; onDone: () => void }) {
  const field = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<string | null>(null);
  useEffect(() => {
    field.current?.scrollIntoView({ block: 'center' });
    field.current?.focus();
  }, [props.created.api_key]);
  return (
    <section class="panel highlight" aria-labelledby="new-key-title">
      <h2 id="new-key-title">Your new API key</h2>
      <p class="warning">
        Copy this key now and keep it somewhere safe: it is shown only once, and MediaForge cannot show it
        again.
      </p>
      <div class="field">
        <label for="new-api-key">New API key</label>
        <div class="inline">
          <input
            id="new-api-key"
            ref={field}
            class="mono"
            type="text"
            readOnly
            value={props.created.api_key}
            onFocus={(e) => e.currentTarget.select()}
          />
          <button
            type="button"
            onClick={async () => {
              const ok = await copyText(props.created.api_key, field.current);
              setCopied(ok ? 'Copied to the clipboard.' : 'Select the key and copy it by hand.');
            }}
          >
            Copy
          </button>
        </div>
      </div>
      <Notice text={copied} />
      <button type="button" class="secondary" onClick={props.onDone}>
        Done
      </button>
    </section>
  );
}

function CreateKeyForm(props: { onCreated: (created: CreatedKey) => void }) {
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<Set<Scope>>(new Set([DEFAULT_SCOPE]));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const toggle = (scope: Scope, on: boolean): void => {
    const next = new Set(scopes);
    if (on) next.add(scope);
    else next.delete(scope);
    setScopes(next);
  };
  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const typed = formValue(event, 'name').trim();
    const checked = new Set(
      Array.from(form.querySelectorAll<HTMLInputElement>('input[type=checkbox]:checked')).map((c) => c.value),
    );
    setBusy(true);
    setError(null);
    try {
      const body: CreateKeyRequest = {
        scopes: SCOPES.filter((s) => s === DEFAULT_SCOPE || checked.has(s)),
      };
      if (typed) body.name = typed;
      const created = await dash<CreatedKey>('POST', '/keys', body);
      setName('');
      setScopes(new Set([DEFAULT_SCOPE]));
      props.onCreated(created);
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="panel" onSubmit={submit} aria-labelledby="create-key-title">
      <h2 id="create-key-title">Create an API key</h2>
      <div class="field">
        <label for="key-name">Name</label>
        <input
          id="key-name"
          name="name"
          type="text"
          maxLength={KEY_NAME_MAX}
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
          autoComplete="off"
        />
      </div>
      <fieldset>
        <legend>Scopes</legend>
        {SCOPES.map((scope) => {
          const fixed = scope === DEFAULT_SCOPE;
          const id = 'scope-' + scope.replace(/[^a-z]/g, '-');
          return (
            <div class="check" key={scope}>
              <input
                id={id}
                type="checkbox"
                value={scope}
                checked={fixed || scopes.has(scope)}
                disabled={fixed}
                onChange={(e) => toggle(scope, e.currentTarget.checked)}
              />
              <label for={id}>{scope}</label>
            </div>
          );
        })}
        <p class="hint">{DEFAULT_SCOPE} is on every key.</p>
      </fieldset>
      <ErrorText error={error} />
      <button type="submit" disabled={busy}>
        Create API key
      </button>
    </form>
  );
}

function KeyRow(props: { apiKey: ApiKey; onRevoked: () => void }) {
  const { apiKey } = props;
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const revoke = async (): Promise<void> => {
    setError(null);
    try {
      await dash('DELETE', '/keys/' + encodeURIComponent(apiKey.id));
      setConfirming(false);
      props.onRevoked();
    } catch (err) {
      setError(describeError(err));
    }
  };
  return (
    <li class={'card' + (apiKey.revoked_at ? ' muted' : '')}>
      <div class="card-head">
        <strong>{apiKey.name || 'Unnamed key'}</strong>
        <code>{apiKey.prefix}…</code>
      </div>
      <dl class="meta">
        <dt>Scopes</dt>
        <dd>{apiKey.scopes.join(', ')}</dd>
        <dt>Created</dt>
        <dd>{formatDate(apiKey.created_at)}</dd>
        <dt>Revoked</dt>
        <dd>{apiKey.revoked_at ? formatDate(apiKey.revoked_at) : 'No'}</dd>
      </dl>
      {!apiKey.revoked_at && (
        <div class="actions">
          {!confirming ? (
            <button type="button" class="danger" onClick={() => setConfirming(true)}>
              Revoke
            </button>
          ) : (
            <>
              <span>Revoke this key? Clients using it stop working at once.</span>
              <button type="button" class="danger" onClick={revoke}>
                Confirm revoke
              </button>
              <button type="button" class="secondary" onClick={() => setConfirming(false)}>
                Cancel
              </button>
            </>
          )}
          <Link href={'/webhooks?key=' + encodeURIComponent(apiKey.id)}>Set webhook</Link>
        </div>
      )}
      <ErrorText error={error} />
    </li>
  );
}

/** API keys: create (shown once), list, revoke. */
export function KeysPage() {
  useTitle('API keys');
  const keys = useLoad(() => dash<KeyList>('GET', '/keys').then((a) => newestFirst(a.keys)), []);
  const [created, setCreated] = useState<CreatedKey | null>(null);
  return (
    <section>
      <h1>API keys</h1>
      <p class="lead">
        Keys let your programs call the MediaForge API. Each key carries the scopes you choose.
      </p>
      {created && <NewKey created={created} onDone={() => setCreated(null)} />}
      <CreateKeyForm
        onCreated={(c) => {
          setCreated(c);
          void keys.reload();
        }}
      />
      <h2>Your keys</h2>
      <ErrorText error={keys.error} />
      {keys.loading && !keys.data && <p>Loading…</p>}
      {keys.data && keys.data.length === 0 && <p>No keys yet.</p>}
      {keys.data && keys.data.length > 0 && (
        <ul class="cards">
          {keys.data.map((k) => (
            <KeyRow key={k.id} apiKey={k} onRevoked={() => void keys.reload()} />
          ))}
        </ul>
      )}
    </section>
  );
}
