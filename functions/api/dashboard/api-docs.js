// The API reference at /docs: Swagger UI (bundled from node_modules/swagger-ui-dist, served by the API
// function like the dashboard's files) rendering the document the API serves. Relative URLs, so a path
// prefix in front of /docs (a custom domain's base path, the emulator's) is kept.
window.addEventListener("DOMContentLoaded", () => {
  window.ui = window.SwaggerUIBundle({
    url: "v1/openapi.json",
    dom_id: "#api-docs",
    deepLinking: true,
    validatorUrl: null, // no badge fetched from swagger.io: nothing leaves this origin
    tryItOutEnabled: false,
  });
});
