// Card images (SVG drawn by the service, /ui/cards/<code>.svg) and their names in words.
const RANKS = { A: "ace", J: "jack", Q: "queen", K: "king" };
const SUITS = { S: "spades", H: "hearts", D: "diamonds", C: "clubs" };

export function cardName(code) {
  if (!code) return "a face-down card";
  const rank = code.slice(0, -1);
  return `${RANKS[rank] || rank} of ${SUITS[code.slice(-1)] || "?"}`;
}

export function cardImage(code, { small = false } = {}) {
  const img = document.createElement("img");
  img.className = small ? "card small" : "card";
  img.src = `/ui/cards/${code ? encodeURIComponent(code) : "back"}.svg`;
  img.alt = cardName(code);
  img.title = img.alt;
  img.dataset.card = code || "back";
  img.width = small ? 30 : 60;
  img.height = small ? 42 : 84;
  return img;
}
