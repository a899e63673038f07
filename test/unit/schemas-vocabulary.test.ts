// schemas/vocabulary.ts names a few values the server also spells where it uses them (the upload types in the
// assets route, the test deliveries' prefix in the webhooks service, the event types in docs/editor.md): until
// those places take them from schemas/, these checks keep the two the same.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PROJECT_EVENT_TYPES } from '../../schemas/vocabulary.ts';

const EDITOR_DOC = fileURLToPath(new URL('../../docs/editor.md', import.meta.url));

/** The `type` column of the events table in docs/editor.md "Events", in its order. */
function documentedEventTypes(): string[] {
  const text = readFileSync(EDITOR_DOC, 'utf8');
  const section = text.slice(text.indexOf('\n## Events\n'), text.indexOf('\n## The events WebSocket\n'));
  return [...section.matchAll(/^\| `([a-z_]+\.[a-z_]+)` +\|/gm)].map((match) => match[1]!);
}

describe('schemas/vocabulary.ts', () => {
  it('has the event types docs/editor.md lists, in its order', () => {
    const documented = documentedEventTypes();
    assert.ok(documented.length > 20, 'the table was found');
    assert.deepEqual([...PROJECT_EVENT_TYPES], documented);
  });
});
