// A module (or what is built from it) loaded on first use instead of at
// import, so a cold start loads only what its configuration uses.

/**
 * `load` run on the first call and its result kept for every later one; a
 * load that fails is not kept, so the next call tries again.
 */
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    if (!loading) {
      const attempt = load();
      loading = attempt;
      attempt.catch(() => {
        if (loading === attempt) loading = undefined;
      });
    }
    return loading;
  };
}
