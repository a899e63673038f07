import { useEffect, useRef, useState } from 'preact/hooks';
import { dash, describeError } from '../api.ts';
import { formatDate } from '../format.ts';
import { navigate } from '../router.ts';
import {
  TEST_DELIVERY_PREFIX,
  type ApiKey,
  type DeliveryList,
  type KeyList,
  type SetWebhookRequest,
  type TestDelivery,
  type Webhook,
  type WebhookSet,
} from '../api-types.ts';
import { ErrorText, formValue, Link, Notice, useLoad, useTitle } from '../ui.tsx';
import { copyText, newestFirst } from './keys.tsx';

function keyLabel(k: ApiKey): string {
  return `${k.name || 'Unnamed key'} (${k.prefix}…)`;
}

function Secret(props: { secret: string }) {
  const field = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<string | null>(null);
  return (
    <div class="panel highlight">
      <p class="warning">
        This signing secret is shown only once. Keep it to verify the signature of each delivery.
      </p>
      <div class="field">
        <label for="webhook-secret">Signing secret</label>
        <div class="inline">
          <input id="webhook-secret" ref={field} class="mono" type="text" readOnly value={props.secret} />
          <button
            type="button"
            onClick={async () => {
              const ok = await copyText(props.secret, field.current);
              setCopied(ok ? 'Copied to the clipboard.' : 'Select the secret and copy it by hand.');
            }}
          >
            Copy
          </button>
        </div>
      </div>
      <Notice text={copied} />
    </div>
  );
}

function Deliveries(props: { keyId: string; version: number }) {
  const deliveries = useLoad(
    () =>
      dash<DeliveryList>('GET', `/keys/${encodeURIComponent(props.keyId)}/deliveries?limit=50`).then(
        (a) => a.deliveries,
      ),
    [props.keyId, props.version],
  );
  return (
    <section aria-labelledby="deliveries-title">
      <div class="row-head">
        <h2 id="deliveries-title">Delivery log</h2>
        <button type="button" class="secondary" onClick={() => void deliveries.reload()}>
          Refresh
        </button>
      </div>
      <ErrorText error={deliveries.error} />
      {deliveries.data && deliveries.data.length === 0 && <p>No deliveries yet.</p>}
      {deliveries.data && deliveries.data.length > 0 && (
        <ul class="cards">
          {deliveries.data.map((d) => (
            <li class="card" key={d.id}>
              <div class="card-head">
                <strong>{d.event}</strong>
                {d.id.startsWith(TEST_DELIVERY_PREFIX) && <span class="badge">test</span>}
                <span class={'badge state-' + d.state}>{d.state}</span>
              </div>
              <dl class="meta">
                <dt>Job</dt>
                <dd>
                  <code>{d.job_id}</code>
                </dd>
                <dt>Created</dt>
                <dd>{formatDate(d.created_at)}</dd>
                <dt>Next attempt</dt>
                <dd>{d.next_attempt_at ? formatDate(d.next_attempt_at) : '—'}</dd>
              </dl>
              {d.attempts.length > 0 && (
                <ol class="attempts">
                  {d.attempts.map((a) => (
                    <li key={a.attempt}>
                      Attempt {a.attempt}, {formatDate(a.at)}:{' '}
                      {a.status !== null ? `HTTP ${a.status}` : 'no answer'}
                      {a.error ? ` — ${a.error}` : ''}
                      {` (${a.duration_ms} ms)`}
                    </li>
                  ))}
                </ol>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function WebhookEditor(props: { apiKey: ApiKey }) {
  const id = encodeURIComponent(props.apiKey.id);
  const hook = useLoad(() => dash<Webhook>('GET', `/keys/${id}/webhook`), [id]);
  const [url, setUrl] = useState('');
  const [secret, setSecret] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [version, setVersion] = useState(0);
  // The stored URL fills the field once it arrives, unless the user has typed meanwhile.
  const typed = useRef(false);
  useEffect(() => {
    if (!typed.current) setUrl(hook.data?.url ?? '');
  }, [hook.data]);
  useEffect(() => {
    typed.current = false;
    setSecret(null);
    setNotice(null);
    setError(null);
  }, [id]);
  const run = async (action: () => Promise<string>): Promise<void> => {
    setBusy(true);
    setError(null);
    setNotice(null);
    try {
      setNotice(await action());
      typed.current = false; // what is stored now is what the field shows
      await hook.reload();
      setVersion((v) => v + 1);
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };
  const save = (event: Event): void => {
    event.preventDefault();
    const entered = formValue(event, 'url').trim();
    void run(async () => {
      const body: SetWebhookRequest = { url: entered };
      const answer = await dash<WebhookSet>('PUT', `/keys/${id}/webhook`, body);
      if (answer.secret) setSecret(answer.secret);
      return 'Webhook saved.';
    });
  };
  const sendTest = (): void => {
    void run(async () => {
      const { delivery } = await dash<TestDelivery>('POST', `/keys/${id}/webhook/test`);
      const attempt = delivery.attempts[0];
      if (!attempt) return 'Test delivery sent.';
      return attempt.status !== null
        ? `Test delivery answered HTTP ${attempt.status}.`
        : `Test delivery got no answer: ${attempt.error ?? 'unknown error'}.`;
    });
  };
  const clear = (): void => {
    void run(async () => {
      await dash('DELETE', `/keys/${id}/webhook`);
      setUrl('');
      return 'Webhook cleared.';
    });
  };
  return (
    <>
      <form class="panel" onSubmit={save}>
        <h2>Webhook of {keyLabel(props.apiKey)}</h2>
        <p class="hint">
          {hook.loading && !hook.data
            ? 'Loading…'
            : hook.data?.url
              ? hook.data.enabled
                ? 'Enabled.'
                : 'Set, not enabled.'
              : 'No webhook is set.'}{' '}
          Job results of this key are posted to this https URL.
        </p>
        <div class="field">
          <label for="webhook-url">Webhook URL</label>
          <input
            id="webhook-url"
            name="url"
            type="url"
            inputMode="url"
            placeholder="https://example.com/hooks/mediaforge"
            value={url}
            onInput={(e) => {
              typed.current = true;
              setUrl(e.currentTarget.value);
            }}
            required
          />
        </div>
        <ErrorText error={error ?? hook.error} />
        <div class="actions">
          <button type="submit" disabled={busy}>
            Save
          </button>
          <button type="button" class="secondary" disabled={busy || !hook.data?.url} onClick={sendTest}>
            Send test delivery
          </button>
          <button type="button" class="secondary" disabled={busy || !hook.data?.url} onClick={clear}>
            Clear
          </button>
        </div>
        <Notice text={notice} />
      </form>
      {secret && <Secret secret={secret} />}
      <Deliveries keyId={props.apiKey.id} version={version} />
    </>
  );
}

/** Webhooks: per key, the URL (save, clear), the shown-once secret and the delivery log. */
export function WebhooksPage() {
  useTitle('Webhooks');
  const keys = useLoad(
    () => dash<KeyList>('GET', '/keys').then((a) => newestFirst(a.keys.filter((k) => !k.revoked_at))),
    [],
  );
  const wanted = new URLSearchParams(location.search).get('key');
  const list = keys.data ?? [];
  const selected = list.find((k) => k.id === wanted) ?? list[0];
  return (
    <section>
      <h1>Webhooks</h1>
      <p class="lead">Each API key can post its job results to one URL.</p>
      <ErrorText error={keys.error} />
      {keys.data && list.length === 0 && (
        <p>
          You have no active API key. <Link href="/keys">Create one</Link> first.
        </p>
      )}
      {selected && (
        <>
          <div class="field">
            <label for="webhook-key">API key</label>
            <select
              id="webhook-key"
              value={selected.id}
              onChange={(e) => navigate('/webhooks?key=' + encodeURIComponent(e.currentTarget.value), true)}
            >
              {list.map((k) => (
                <option key={k.id} value={k.id}>
                  {keyLabel(k)}
                </option>
              ))}
            </select>
          </div>
          <WebhookEditor key={selected.id} apiKey={selected} />
        </>
      )}
    </section>
  );
}
