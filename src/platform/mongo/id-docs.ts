// Records whose `id` is the document's `_id`: the one mapping between the ports' shape and MongoDB's.

/** A record as stored: its `id` as `_id`. */
export type IdDoc<T extends { id: string }> = Omit<T, 'id'> & { _id: string };

export const toIdDoc = <T extends { id: string }>({ id, ...rest }: T): IdDoc<T> =>
  ({ _id: id, ...rest }) as unknown as IdDoc<T>;

export function fromIdDoc<T extends { id: string }>(doc: IdDoc<T> | null): T | null {
  if (!doc) return null;
  const { _id, ...rest } = doc;
  return { id: _id, ...rest } as unknown as T;
}
