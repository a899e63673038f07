import { defineConfig } from 'vite';

// The dashboard SPA: built from web/ into dist/web/, served by the service from the same origin under a CSP
// of `script-src 'self'; style-src 'self'`, so nothing may be inlined (no inline script, no inline style).
export default defineConfig({
  root: 'web',
  base: '/',
  publicDir: false,
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: '../dist/web',
    emptyOutDir: true,
    assetsDir: 'assets',
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: true,
  },
  server: { port: 5173, strictPort: false },
});
