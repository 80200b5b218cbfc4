/** The built console (`vite build`): what the api serves at /console. */
export declare const consoleRoot: string
