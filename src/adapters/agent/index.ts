export * from './builtin.ts';
export * from './director-intents.ts';
export * from './scene-steps.ts';
export * from './storyboard.ts';
export * from './timeline-edits.ts';
export * from './tool-results.ts';
export * from './turn-context.ts';
export * from './llm/index.ts';
