// Exact money for the page: decimal strings as integer cents (BigInt), never floats (MONEY-1).

export function cents(text) {
  const m = /^(-?)(\d+)(?:\.(\d{1,2}))?$/.exec(String(text ?? ""));
  if (!m) return null;
  const value = BigInt(m[2]) * 100n + BigInt((m[3] || "").padEnd(2, "0") || "0");
  return m[1] ? -value : value;
}

export function show(value) {
  const neg = value < 0n;
  const a = neg ? -value : value;
  return `${neg ? "-" : ""}${a / 100n}.${String(a % 100n).padStart(2, "0")}`;
}
