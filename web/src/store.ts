// localStorage / sessionStorage with JSON and without exceptions (private mode).
export function load<T>(key: string, session = false): T | null {
  try {
    const v = (session ? sessionStorage : localStorage).getItem(key)
    return v ? (JSON.parse(v) as T) : null
  } catch {
    return null
  }
}
export function save(key: string, value: unknown, session = false) {
  try {
    const st = session ? sessionStorage : localStorage
    if (value === null || value === undefined) st.removeItem(key)
    else st.setItem(key, JSON.stringify(value))
  } catch {
    /* storage full or disabled: the app still works for this page view */
  }
}
