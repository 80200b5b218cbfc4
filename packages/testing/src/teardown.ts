/** The part of a tap test that support code needs: somewhere to register clean-up. */
export interface Teardown { teardown: (fn: () => unknown) => void }
