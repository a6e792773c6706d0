// @ts-check
// "/": sign in, then who you are, your organizations and where to go next.
import { api } from "./app.js";
import { $, requireSignIn, showError, showOnly } from "./ui.js";

const user = await requireSignIn();
$("home-title").textContent = `Welcome${user.name ? `, ${user.name}` : ""}`;
$("home-name").textContent = user.name || "—";
$("home-email").textContent = user.email;
$("home-account").textContent = [user.isAdmin ? "instance administrator" : "user", user.twoFactorEnabled ? "two-factor on" : "two-factor off"].join(", ");
try {
  const orgs = await api("GET", "/orgs?limit=200");
  for (const org of orgs.items) {
    const li = document.createElement("li");
    const name = document.createElement("strong");
    // The name opens the organization's tasks.
    const tasks = document.createElement("a");
    tasks.href = `/tasks?org=${encodeURIComponent(org.id)}`;
    tasks.textContent = org.name;
    name.append(tasks);
    const role = document.createElement("span");
    role.className = "badge";
    role.textContent = org.role;
    li.append(name, " ", role);
    $("home-orgs").append(li);
  }
  $("home-no-orgs").hidden = orgs.items.length > 0;
} catch (err) {
  showError("home-error", err);
}
showOnly("home");
