// esbuild bundles stylesheets imported from TypeScript into <page>.css.
declare module '*.css';
