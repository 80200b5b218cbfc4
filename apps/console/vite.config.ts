import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { brotliCompress, constants, gzip } from 'node:zlib'
import { defaultClientConditions, defineConfig, type Plugin } from 'vite'

const COMPRESSIBLE = /\.(js|css|html|svg|json)$/
const gzipped = promisify(gzip)
const brotlied = promisify(brotliCompress)

/**
 * Writes `.gz` and `.br` beside every text file of the build, once, so that the api
 * (@fastify/static `preCompressed`) sends them without compressing per request.
 */
function precompress (outDir: string): Plugin {
  return {
    name: 'switchboard-precompress',
    apply: 'build',
    async closeBundle () {
      const files = (await readdir(outDir, { recursive: true })).filter((file) => COMPRESSIBLE.test(file))
      await Promise.all(files.map(async (file) => {
        const path = join(outDir, file)
        const content = await readFile(path)
        await writeFile(`${path}.gz`, await gzipped(content, { level: 9 }))
        await writeFile(`${path}.br`, await brotlied(content, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }))
      }))
    }
  }
}

const outDir = 'dist'

export default defineConfig({
  // The api serves the build at /console (apps/api/src/plugins/console.ts).
  base: '/console/',
  // `@switchboard/source`: the graph module of packages/core is read from its TypeScript source.
  // The builder's graph editor (@xyflow/react) is a React library: preact/compat stands in for React.
  resolve: {
    conditions: ['@switchboard/source', ...defaultClientConditions],
    alias: { react: 'preact/compat', 'react-dom': 'preact/compat', 'react/jsx-runtime': 'preact/jsx-runtime' }
  },
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir,
    emptyOutDir: true,
    target: 'es2022',
    // Every browser the console supports preloads modules; the polyfill would be dead weight.
    modulePreload: { polyfill: false },
    // Fonts and images stay files (the Content-Security-Policy allows `self` only, and no inline data but images).
    assetsInlineLimit: 0,
    rollupOptions: {
      // @xyflow/react marks its modules "use client" for React server components, which the console does not use.
      onwarn (warning, warn) { if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning) }
    }
  },
  plugins: [precompress(outDir)],
  server: {
    // `vite` in apps/console for development against an api on :3000.
    proxy: { '/api': 'http://127.0.0.1:3000', '/health': 'http://127.0.0.1:3000' }
  }
})
