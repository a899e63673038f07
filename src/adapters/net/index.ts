export {
  guardedGet,
  guardedPost,
  createGuardedFetch,
  type GuardedFetch,
  type GuardedFetchOptions,
  type GuardedGetResult,
  type GuardedPostResult,
} from './guarded-fetch.ts';
export { FetchRefused, describeRefusal, type RefusalReason } from './fetch-refused.ts';
export { defaultTargetPolicy, type HostResolver, type TargetPolicy } from './checked-target.ts';
