import { dash } from '../api.ts';
import { formatDate, formatDelta, formatNumber } from '../format.ts';
import type { Balance, Ledger } from '../api-types.ts';
import { ErrorText, useLoad, useTitle } from '../ui.tsx';

/** Credits: the balance and the ledger, newest first. */
export function CreditsPage() {
  useTitle('Credits');
  const balance = useLoad(() => dash<Balance>('GET', '/balance'), []);
  const ledger = useLoad(() => dash<Ledger>('GET', '/ledger').then((a) => a.entries), []);
  return (
    <section>
      <h1>Credits</h1>
      <ErrorText error={balance.error} />
      {balance.data && (
        <p class="balance">
          Balance: <strong>{formatNumber(balance.data.credits)}</strong> credits
        </p>
      )}
      <div class="row-head">
        <h2>Ledger</h2>
        <button
          type="button"
          class="secondary"
          onClick={() => {
            void balance.reload();
            void ledger.reload();
          }}
        >
          Refresh
        </button>
      </div>
      <ErrorText error={ledger.error} />
      {ledger.data && ledger.data.length === 0 && <p>No entries yet.</p>}
      {ledger.data && ledger.data.length > 0 && (
        // It scrolls sideways at phone width, so it takes focus: keyboard users scroll it too.
        <div class="table-wrap" role="region" aria-label="Credit ledger" tabIndex={0}>
          <table>
            <caption class="sr-only">Credit ledger, newest first</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col" class="num">
                  Change
                </th>
                <th scope="col" class="num">
                  Balance
                </th>
                <th scope="col">Reason</th>
                <th scope="col">Job</th>
              </tr>
            </thead>
            <tbody>
              {ledger.data.map((e) => (
                <tr key={e.id}>
                  <td>{formatDate(e.created_at)}</td>
                  <td class={'num ' + (e.delta < 0 ? 'neg' : 'pos')}>{formatDelta(e.delta)}</td>
                  <td class="num">{formatNumber(e.balance_after)}</td>
                  <td>{e.reason}</td>
                  <td>{e.job_id ? <code>{e.job_id}</code> : '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
