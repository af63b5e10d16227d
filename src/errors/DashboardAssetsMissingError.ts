/** The dashboard's page files (index.html, app.js, app.css) are not where the built package keeps them. */
export class DashboardAssetsMissingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
