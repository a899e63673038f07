/** The service's version: the OpenAPI document's and what MCP clients are told. */
export const VERSION = '0.1.0';
