// What is derived from an object that is never changed once made (a route as
// the cache holds it, a part of a built snapshot) is made once per object and
// looked up after: a part a build keeps from the last one
// (translate/keep-unchanged.ts) comes with its hash, ADS form and bytes.

/** `make()`'s answer for `key`, made on the first ask and kept as long as `key` lives. */
export function perObject<K extends object, V>(memo: WeakMap<K, V>, key: K, make: () => V): V {
  let v = memo.get(key);
  if (v === undefined) {
    v = make();
    memo.set(key, v);
  }
  return v;
}
