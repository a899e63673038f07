import { newId } from '../platform/index.ts';

/** A direct edit's precondition: the `If-Match` revision (docs/editor.md, routes). */
export interface EditOptions {
  ifMatch?: number;
}

/** A direct edit's op id: each request is one change, applied once however the actor delivers it. */
export const editOp = () => newId('op', 16);

/** The command field of an edit's precondition: `if_match` when the request named one. */
export const ifMatchField = (options: EditOptions): { if_match?: number } =>
  options.ifMatch !== undefined ? { if_match: options.ifMatch } : {};
