// The service's API as the page uses it: every request carries the tab's API key.
// The key lives in sessionStorage: it survives a reload of this tab and ends with it.
const KEY = "roundaudit.api-key";

export function getKey() {
  return sessionStorage.getItem(KEY);
}

export function setKey(token) {
  sessionStorage.setItem(KEY, token);
}

export function forgetKey() {
  sessionStorage.removeItem(KEY);
}

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem && problem.detail ? problem.detail : `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
    this.code = this.problem.code || `http-${status}`;
  }
}

export async function get(path, { accept = "application/json" } = {}) {
  const headers = { Accept: accept };
  const key = getKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  const response = await fetch(path, { headers, cache: "no-store", credentials: "omit" });
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

/** A query string from an object; arrays repeat, empty values are left out. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    for (const v of Array.isArray(value) ? value : [value]) {
      if (v !== undefined && v !== null && v !== "") q.append(name, String(v));
    }
  }
  const text = q.toString();
  return text ? `?${text}` : "";
}

export function enc(part) {
  return encodeURIComponent(part);
}
