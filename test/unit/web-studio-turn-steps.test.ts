// The chat's turn steps (web/src/studio/turn-steps.ts): what the page makes of a turn's events.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_TURNS, NO_TURN_STEPS, noteTurnEvent, type TurnSteps } from '../../web/src/studio/turn-steps.ts';
import type { ProjectEvent } from '../../web/src/api-types.ts';

let seq = 0;
function event(type: string, data: Record<string, unknown>, turnId: string | null = 'turn_A'): ProjectEvent {
  seq++;
  return {
    type,
    seq,
    ts: new Date(0).toISOString(),
    project_id: 'vp_1',
    video_id: 'vv_1',
    turn_id: turnId,
    data,
  };
}

const fold = (events: ProjectEvent[], from: TurnSteps = NO_TURN_STEPS): TurnSteps =>
  events.reduce(noteTurnEvent, from);

describe('turn steps', () => {
  it('records tools as they start and finish, in order, with their summary or error', () => {
    const state = fold([
      event('turn.started', { instruction: 'go', image_urls: [] }),
      event('tool.started', { call_id: 'call_1', name: 'append_context', arguments: {} }),
      event('tool.finished', { call_id: 'call_1', name: 'append_context', ok: true, summary: 'appended' }),
      event('tool.started', { call_id: 'call_2', name: 'add_clip', arguments: {} }),
    ]);
    const steps = state.turns.turn_A?.steps;
    assert.deepEqual(steps, [
      { kind: 'tool', callId: 'call_1', name: 'append_context', state: 'ok', summary: 'appended' },
      { kind: 'tool', callId: 'call_2', name: 'add_clip', state: 'running', summary: null },
    ]);
    const failed = noteTurnEvent(
      state,
      event('tool.finished', { call_id: 'call_2', name: 'add_clip', ok: false, summary: 'no such asset' }),
    );
    assert.deepEqual(failed.turns.turn_A?.steps[1], {
      kind: 'tool',
      callId: 'call_2',
      name: 'add_clip',
      state: 'failed',
      summary: 'no such asset',
    });
    assert.equal(failed.turns.turn_A?.outcome, null, 'a failed tool is not a failed turn');
  });

  it('follows a generation from its charge through its progress to its asset', () => {
    const started = fold([
      event('media.started', { job_id: 'job_1', kind: 'video', model: 'vidmodel-2.0', credits: 505 }),
      event('media.progress', { job_id: 'job_1', status: 'processing', elapsed_ms: 2000 }),
    ]);
    assert.deepEqual(started.turns.turn_A?.steps, [
      {
        kind: 'media',
        jobId: 'job_1',
        mediaKind: 'video',
        model: 'vidmodel-2.0',
        credits: 505,
        state: 'running',
        elapsedMs: 2000,
        fraction: null,
        error: null,
        refundedCredits: null,
      },
    ]);
    const later = fold(
      [event('media.progress', { job_id: 'job_1', fraction: 0.6, elapsed_ms: 4000 })],
      started,
    );
    assert.equal(later.turns.turn_A?.steps[0]?.kind === 'media' && later.turns.turn_A.steps[0].fraction, 0.6);
    const back = fold([event('media.progress', { job_id: 'job_1', fraction: 0.2 })], later);
    assert.equal(back.turns.turn_A?.steps[0]?.kind === 'media' && back.turns.turn_A.steps[0].fraction, 0.6);
    const done = fold([event('media.completed', { job_id: 'job_1', asset_id: 'va_1' })], back);
    const step = done.turns.turn_A?.steps[0];
    assert.ok(step?.kind === 'media');
    assert.equal(step.state, 'completed');
    assert.equal(step.fraction, 1);
    assert.equal(step.elapsedMs, 4000);
  });

  it('records a failed generation with its error and refund', () => {
    const state = fold([
      event('media.started', { job_id: 'job_2', kind: 'image', model: 'imgmodel', credits: 10 }),
      event('media.failed', { job_id: 'job_2', error: 'provider refused', refunded_credits: 10 }),
    ]);
    const step = state.turns.turn_A?.steps[0];
    assert.ok(step?.kind === 'media');
    assert.equal(step.state, 'failed');
    assert.equal(step.error, 'provider refused');
    assert.equal(step.refundedCredits, 10);
  });

  it("keeps the turn's cost when it completes, and its error when it fails", () => {
    const state = fold([
      event('turn.completed', { assistant_text: 'done', credits_charged: 510 }),
      event('turn.failed', { error: 'Insufficient credits', status: 402 }, 'turn_B'),
    ]);
    assert.deepEqual(state.turns.turn_A?.outcome, { kind: 'completed', creditsCharged: 510 });
    assert.deepEqual(state.turns.turn_B?.outcome, {
      kind: 'failed',
      error: 'Insufficient credits',
      status: 402,
    });
    assert.deepEqual(state.order, ['turn_A', 'turn_B']);
  });

  it('leaves the state itself alone for events without a turn, unknown types and odd data', () => {
    const state = fold([event('turn.started', {})]);
    for (const ignored of [
      event('clip.created', { clip: {}, revision: 3 }, null),
      event('media.completed', { job_id: 'job_9', asset_id: 'va_9' }, null),
      event('assistant.delta', { text: 'hi' }),
      event('something.new', { x: 1 }),
      event('tool.started', { name: 'no call id' }),
      event('media.progress', { elapsed_ms: 1 }),
    ])
      assert.equal(noteTurnEvent(state, ignored), state, ignored.type);
  });

  it(`forgets the oldest turns past ${MAX_TURNS}`, () => {
    const events = Array.from({ length: MAX_TURNS + 2 }, (_, i) => event('turn.started', {}, `turn_${i}`));
    const state = fold(events);
    assert.equal(state.order.length, MAX_TURNS);
    assert.equal(state.order[0], 'turn_2');
    assert.equal(state.turns.turn_0, undefined);
    assert.equal(Object.keys(state.turns).length, MAX_TURNS);
  });
});
