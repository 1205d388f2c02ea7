// The Swagger UI of roundaudit's /docs page, served by the service itself (no CDN, no inline
// script: the page's Content-Security-Policy allows scripts from the service only).
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  persistAuthorization: false,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
