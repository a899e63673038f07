export { createFileAuditSink, auditFileName, type FileAuditSinkOptions } from './file-sink.ts';
