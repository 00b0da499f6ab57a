// santa view: lays out the table and the pages of runs and batches from the
// page's embedded JSON. Every text goes in through textContent (never markup),
// so an output holding a script tag or an onerror= attribute shows as text.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("santa-data").textContent);
  var PAGE = 50;
  var runs = new Map(data.runs.map(function (r) { return [r.id, r]; }));
  var batches = new Map(data.batches.map(function (b) { return [b.id, b]; }));
  var table = { kind: "all", verdict: "all", text: "", sort: "date", dir: -1, page: 0 };

  function h(tag, attrs) {
    var el = document.createElement(tag);
    var a = attrs || {};
    Object.keys(a).forEach(function (k) {
      if (a[k] == null || a[k] === undefined || a[k] === false) return;
      if (k === "class") el.className = a[k];
      else if (k === "text") el.textContent = String(a[k]);
      else if (k === "on") Object.keys(a.on).forEach(function (e) { el.addEventListener(e, a.on[e]); });
      else el.setAttribute(k, String(a[k]));
    });
    for (var i = 2; i < arguments.length; i++) add(el, arguments[i]);
    return el;
  }
  function add(el, kid) {
    if (kid == null || kid === undefined || kid === false) return;
    if (Array.isArray(kid)) { kid.forEach(function (k) { add(el, k); }); return; }
    el.appendChild(typeof kid === "object" ? kid : document.createTextNode(String(kid)));
  }
  function badge(v) { return h("span", { "class": "badge v-" + String(v).replace(/[^A-Za-z]/g, ""), text: v }); }
  function money(v) { return v == null || v === undefined ? "n/a" : "$" + (v < 1 ? v.toFixed(4) : v.toFixed(2)); }
  function pct(v) { return v == null || v === undefined ? "n/a" : (v * 100).toFixed(1) + " %"; }
  function when(ts) { return ts ? String(ts).slice(0, 19).replace("T", " ") : ""; }
  function runLink(id) { return h("a", { href: "#run/" + encodeURIComponent(id), text: id }); }
  function batchLink(id) { return h("a", { href: "#batch/" + encodeURIComponent(id), text: id }); }
  function crit(i) { return data.criteria[i]; }
  function list(items) { return h("ul", null, items.map(function (t) { return h("li", { text: t }); })); }
  function section(title) { return h("div", { "class": "box" }, h("h2", { text: title }), Array.prototype.slice.call(arguments, 1)); }
  function who(labels) { return labels.length ? labels.join(" and ") : "nobody"; }
  function seconds(v) { return v < 0.1 ? "under 0.1 s" : v < 60 ? v.toFixed(1) + " s" : Math.floor(v / 60) + " min " + Math.round(v % 60) + " s"; }
  // What a reply cost and who wrote it: model, tokens, cost, time, each only when known.
  function model(m) { return typeof m === "number" ? data.models[m] : m; }
  function facts(v) {
    var out = [];
    if (v.model != null) out.push(model(v.model));
    if (v.tokens != null) out.push(v.tokens.toLocaleString("en") + " tokens");
    if (v.cost != null) out.push(money(v.cost));
    if (v.s != null) out.push(seconds(v.s));
    return out.join(" · ");
  }
  function problemsText(p) { return !p ? "" : p[0] === p[1] ? String(p[0]) : p[0] + " → " + p[1]; }

  // -- the table of runs and batches ---------------------------------------------------

  function rows() {
    var out = [];
    data.runs.forEach(function (r) {
      out.push({ kind: "run", id: r.id, target: r.target || "", verdict: r.verdict, shipped: r.shipped,
        state: r.state, rounds: r.rounds, roundsText: String(r.rounds), cost: r.cost, date: r.started,
        problems: r.problems ? r.problems[0] : null, problemsText: problemsText(r.problems),
        ended: r.ended || (r.shipped ? "shipped: NICE in round " + r.rounds : r.state === "interrupted" ? "interrupted: resume or close it"
          : r.verdict === "open" ? "still open" : r.verdict === "NICE" ? "NICE, not logged as shipped yet" : "") });
    });
    data.batches.forEach(function (b) {
      var why = b.detail && b.detail.reasons && b.detail.reasons.length ? b.detail.reasons[0] : "";
      out.push({ kind: "batch", id: b.id, target: (b.population == null ? "?" : b.population) + " items, " + b.reviewed + " verified",
        verdict: b.verdict, rounds: b.samples, roundsText: b.samples + " sample" + (b.samples === 1 ? "" : "s"),
        cost: b.cost, date: b.created, problems: null, problemsText: "",
        ended: b.verdict === "ACCEPTED" ? "accepted" : why || (b.verdict === "open" ? "still open" : "") });
    });
    return out;
  }
  var allRows = rows();

  function shownRows() {
    var text = table.text.toLowerCase();
    var found = allRows.filter(function (r) {
      if (table.kind !== "all" && r.kind !== table.kind) return false;
      if (table.verdict !== "all" && r.verdict !== table.verdict) return false;
      return !text || (r.id + " " + r.target).toLowerCase().indexOf(text) !== -1;
    });
    var key = table.sort;
    found.sort(function (a, b) {
      var x = a[key], y = b[key];
      if (x == null || x === undefined) return 1;
      if (y == null || y === undefined) return -1;
      return (x < y ? -1 : x > y ? 1 : 0) * table.dir;
    });
    return found;
  }

  function drawTable() {
    var holder = document.getElementById("table");
    if (!holder) return;
    var found = shownRows();
    var pages = Math.max(1, Math.ceil(found.length / PAGE));
    table.page = Math.min(table.page, pages - 1);
    var first = table.page * PAGE;
    var cols = [["kind", "kind"], ["id", "id"], ["target", "target"], ["verdict", "verdict"],
      ["problems", "problems"], ["ended", "why it ended"], ["rounds", "rounds"], ["cost", "cost"], ["date", "date"]];
    var head = h("tr", null, cols.map(function (c) {
      var cls = "sortable" + (c[0] === "rounds" || c[0] === "cost" || c[0] === "problems" ? " num" : "") +
        (table.sort === c[0] ? (table.dir > 0 ? " sorted-up" : " sorted-down") : "");
      return h("th", { "class": cls, on: { click: function () {
        table.dir = table.sort === c[0] ? -table.dir : (c[0] === "date" || c[0] === "cost" ? -1 : 1);
        table.sort = c[0]; drawTable();
      } } }, c[1]);
    }));
    var body = h("tbody", null, found.slice(first, first + PAGE).map(function (r) {
      // data-label names each cell where a narrow screen shows a row as a card.
      return h("tr", { "data-id": r.id },
        h("td", { "data-label": "kind", text: r.kind }),
        h("td", { "class": "mono", "data-label": "id" }, r.kind === "run" ? runLink(r.id) : batchLink(r.id)),
        h("td", { "class": "target", "data-label": "target", text: r.target }),
        h("td", { "data-label": "verdict" }, badge(r.verdict), r.shipped ? h("span", { "class": "tag", text: "shipped" }) : null,
          r.state === "interrupted" ? h("span", { "class": "tag", text: "interrupted" }) : null),
        h("td", { "class": "num problems", "data-label": "problems", title: r.problemsText ? "problems in the first round → in the last" : null, text: r.problemsText }),
        h("td", { "class": "ended", "data-label": "why it ended", title: r.ended }, h("span", { "class": "clamp", text: r.ended })),
        h("td", { "class": "num", "data-label": "rounds", text: r.roundsText }),
        h("td", { "class": "num", "data-label": "cost", text: money(r.cost) }),
        h("td", { "class": "mono", "data-label": "date", text: when(r.date) }));
    }));
    var verdicts = ["all", "NICE", "ESCALATED", "open", "ACCEPTED"];
    var controls = h("div", { "class": "controls" },
      h("input", { type: "search", placeholder: "filter by id or target", value: table.text, "aria-label": "filter",
        on: { input: function (e) { table.text = e.target.value; table.page = 0; drawTable(); focusFilter(); } } }),
      h("select", { "aria-label": "kind", on: { change: function (e) { table.kind = e.target.value; table.page = 0; drawTable(); } } },
        ["all", "run", "batch"].map(function (k) { return h("option", { value: k, selected: table.kind === k, text: k === "all" ? "runs and batches" : k + "s only" }); })),
      h("select", { "aria-label": "verdict", on: { change: function (e) { table.verdict = e.target.value; table.page = 0; drawTable(); } } },
        verdicts.map(function (v) { return h("option", { value: v, selected: table.verdict === v, text: v === "all" ? "any verdict" : v }); })));
    function go(to) { return function () { table.page = to; drawTable(); }; }
    var pager = h("div", { "class": "pager" },
      h("button", { disabled: table.page === 0, on: { click: go(0) } }, "first"),
      h("button", { disabled: table.page === 0, on: { click: go(table.page - 1) } }, "previous"),
      h("span", { text: found.length ? "rows " + (first + 1) + " to " + Math.min(first + PAGE, found.length) + " of " + found.length +
        (pages > 1 ? " (page " + (table.page + 1) + " of " + pages + ")" : "") : "nothing matches" }),
      h("button", { disabled: table.page >= pages - 1, on: { click: go(table.page + 1) } }, "next"),
      h("button", { disabled: table.page >= pages - 1, on: { click: go(pages - 1) } }, "last"));
    holder.replaceChildren(controls, h("table", { "class": "runs" }, h("thead", null, head), body), pager);
  }
  function focusFilter() {
    var box = document.querySelector("#table input[type=search]");
    if (box) { box.focus(); box.setSelectionRange(box.value.length, box.value.length); }
  }

  // -- a run's page ------------------------------------------------------------------------

  function runPage(r) {
    var d = r.detail ? filled(r.detail) : null;
    var head = [
      h("p", null, h("a", { href: "#", text: "← all runs and batches" })),
      h("h1", null, "Run ", h("span", { "class": "mono", text: r.id }), badge(r.verdict),
        r.shipped ? h("span", { "class": "tag", text: "shipped" }) : null,
        r.state && ["open", "shipped", "escalated"].indexOf(r.state) === -1 ? h("span", { "class": "tag", text: r.state }) : null),
      h("div", { "class": "meta" },
        h("span", null, "target ", h("b", { text: r.target })),
        h("span", null, "started ", h("b", { text: when(r.started) })),
        h("span", null, "cost ", h("b", { text: money(r.cost) })),
        r.tokens != null ? h("span", null, "tokens ", h("b", { text: r.tokens.toLocaleString("en") })) : null,
        d && d.rubric ? h("span", null, "rubric ", h("b", { text: d.rubric })) : null,
        d && d.reviewers ? h("span", null, "reviewers ", h("b", { text: d.reviewers })) : null,
        d && d.models ? h("span", null, "models ", h("b", { text: Array.isArray(d.models) ? d.models.join(", ") : JSON.stringify(d.models) })) : null,
        r.batch ? h("span", null, "batch ", batchLink(r.batch)) : null,
        r.escapes ? h("span", null, h("b", { text: r.escapes + " escape(s) reported after shipping" })) : null)
    ];
    if (!d) return [head, h("p", { "class": "notice", text: data.left_out })];
    var said = (data.folder_notes || {})[r.folder];
    var out = [head, d.notes.map(function (n) { return h("p", { "class": "notice", text: n }); }),
      said ? h("p", { "class": "notice", text: said }) : null];
    out.push(journey(r, d));
    if (d.escalation) out.push(escalation(d.escalation, r.id));
    d.rounds.forEach(function (round) { out.push(roundBox(round, d)); });
    if (d.events.length) {
      out.push(section("Events", h("ul", null, d.events.map(function (e) {
        return h("li", null, h("b", { text: e.event }), " ", h("span", { "class": "muted", text: when(e.ts) }),
          e.text ? " · " + e.text : "", e.cost ? " · " + money(e.cost) : "");
      }))));
    }
    if (d.spec != null) out.push(h("details", { "class": "box" }, h("summary", { text: "The spec" }), h("pre", { "class": "output", text: d.spec })));
    return out;
  }

  // The page's data leaves out empty fields (a large log is mostly defaults).
  function filled(d) {
    d.criteria = d.criteria || []; d.rounds = d.rounds || []; d.events = d.events || []; d.notes = d.notes || [];
    d.rounds.forEach(function (r) {
      r.reasons = r.reasons || []; r.reviews = r.reviews || []; r.problems = r.problems || [];
      r.reviews.forEach(function (v) { v.errors = v.errors || []; v.checks = v.checks || ""; });
      r.problems.forEach(function (p) { p.quotes = p.quotes || []; p.by = p.by || []; p.issue = p.issue || ""; });
      if (r.fix) { r.fix.notes = r.fix.notes || ""; r.fix.questions = r.fix.questions || []; }
    });
    if (d.escalation) { d.escalation.reasons = d.escalation.reasons || []; d.escalation.questions = d.escalation.questions || []; }
    return d;
  }

  function journey(r, d) {
    var steps = [];
    d.rounds.forEach(function (round) {
      steps.push(h("span", { "class": "step" }, "round " + round.n + " ", badge(round.verdict || "not gated"),
        round.problems.length ? " " + round.problems.length + " problem" + (round.problems.length === 1 ? "" : "s") : ""));
      var asked = round.fix && round.fix.questions.length;
      if (asked) steps.push(h("span", { "class": "arrow", text: "→ the fixer asks a question" }));
      else if (round.next && round.next !== "ship") steps.push(h("span", { "class": "arrow", text: "→ " + round.next }));
    });
    if (r.shipped) steps.push(h("span", { "class": "arrow", text: "→" }), h("span", { "class": "step", text: "shipped" }));
    else if (r.verdict === "ESCALATED") steps.push(h("span", { "class": "arrow", text: "→" }), h("span", { "class": "step", text: "a person takes over" }));
    return h("div", { "class": "journey" }, steps);
  }

  function escalation(e, id) {
    return h("div", { "class": "escalation" }, h("h2", { text: "Escalated: a person takes over" }),
      e.reasons.length ? list(e.reasons) : h("p", { text: "No reason was logged." }),
      e.questions.map(function (q) { return h("div", { "class": "question", text: "The fixer asks: " + q }); }),
      e.open_problems ? h("p", { text: e.open_problems + " problem(s) of round " + e.round + " are unresolved (below)." }) : null,
      h("p", { "class": "muted", text: e.from === "report" ? "The whole escalation report: .santa/runs/" + id + "/report.md, or santa report " + id + "." : "From the log: the run folder and its report are not available." }));
  }

  function roundBox(round, d) {
    var labels = round.reviews.map(function (v) { return v.label; });
    var valid = round.reviews.filter(function (v) { return !v.invalid; }).map(function (v) { return v.label; });
    var box = h("div", { "class": "round", id: "round-" + round.n },
      h("h2", null, "Round " + round.n, badge(round.verdict || "not gated"),
        round.next ? h("span", { "class": "muted", text: "next: " + round.next }) : null,
        round.gates > 1 ? h("span", { "class": "tag", text: "gated " + round.gates + " times (re-reviews)" }) : null,
        round.agreement != null ? h("span", { "class": "tag", title: "the share of this round's problems that two or more reviewers raised",
          text: "reviewers agree on " + pct(round.agreement) + " of the problems" }) : null),
      round.reasons.length ? h("ul", { "class": "reasons" }, round.reasons.map(function (t) { return h("li", { text: t }); })) : null,
      changes(round),
      h("div", { "class": "cols" },
        h("div", null, h("h3", { text: "Checks by criterion" }), checks(round, d, labels)),
        h("div", null, h("h3", { text: round.problems.length ? "Problems (merged)" : "Problems" }), problems(round, valid))));
    if (round.output != null) {
      box.appendChild(h("details", { open: round.problems.length > 0 || round.n === d.rounds.length },
        h("summary", { text: "The output as reviewed in round " + round.n + (round.problems.length ? " (quotes highlighted)" : "") }),
        output(round)));
    }
    if (round.reviews.length) box.appendChild(replies(round, d));
    if (round.fix) box.appendChild(fix(round.fix));
    return box;
  }

  // Each reviewer's whole reply as it came back (redacted), with who wrote it
  // and what it took: what one reads to judge a false alarm.
  function replies(round, d) {
    var models = d.models_by || {};
    return h("div", { "class": "replies" }, h("h3", { text: "What each reviewer said" }),
      round.reviews.map(function (v) {
        var said = facts({ model: v.model != null ? v.model : models[v.label], tokens: v.tokens, cost: v.cost, s: v.s });
        return h("details", { "class": "reply", "data-label": v.label },
          h("summary", null, "Reviewer " + v.label + "'s reply", said ? h("span", { "class": "facts", text: said }) : null),
          v.reply != null ? h("pre", { "class": "raw", text: v.reply })
            : h("p", { "class": "muted", text: d.raw_left_out ? data.raw_left_out
              : "The reply itself is kept in the run folder, which this page could not read." }));
      }));
  }

  // What the fix did to the output, read before this round's checks of it.
  function changes(round) {
    if (round.unchanged) return h("p", { "class": "notice", text: "The output is the same as in round " + (round.n - 1) + ": the fix changed nothing." });
    if (!round.diff) return null;
    return h("details", { "class": "changes", open: true }, h("summary", { text: "What the fix changed since round " + (round.n - 1) }),
      h("div", { "class": "diff mono" }, round.diff.map(function (op) {
        var cls = { "+": "add", "-": "del", " ": "same", "~": "skip" }[op[0]];
        return h("div", { "class": cls, text: op[1] });
      })));
  }

  function checks(round, d, labels) {
    if (!round.reviews.length) return h("p", { "class": "muted", text: "No review was logged for this round." });
    var head = h("tr", null, h("th", { text: "criterion" }), round.reviews.map(function (v) {
      return h("th", null, "reviewer " + v.label + " ", !v.invalid ? badge(v.verdict || "?") : badge("invalid"),
        v.standing ? h("span", { "class": "tag", text: "kept from before" }) : null);
    }));
    // A check every reviewer passed is one line; the reviewers' words show
    // where it matters: a failed check, or reviewers who disagree.
    var body = d.criteria.map(function (ci, k) {
      var codes = round.reviews.map(function (v) { return v.checks.charAt(k); });
      var agreed = codes.every(function (c) { return c === "P"; });
      return h("tr", null, h("td", { text: crit(ci) }), round.reviews.map(function (v) {
        var code = v.checks.charAt(k);
        var result = code === "P" ? "PASS" : code === "F" ? "FAIL" : null;
        var detail = v.details ? v.details[k] : null;
        return h("td", { "class": "cell", title: detail }, result ? badge(result) : h("span", { "class": "muted", text: "not rated" }),
          detail && !agreed ? h("span", { "class": "detail", text: detail }) : null);
      }));
    });
    var errors = round.reviews.filter(function (v) { return v.errors.length; }).map(function (v) {
      return h("div", { "class": "notice" }, "Reviewer " + v.label + "'s reply did not count: ", list(v.errors));
    });
    return [h("table", { "class": "checks" }, h("thead", null, head), h("tbody", null, body)), errors];
  }

  function problems(round, valid) {
    if (!round.problems.length) return h("p", { "class": "muted", text: round.verdict === "NICE" ? "None: every reviewer passed the output." : "No problem was merged." });
    return h("ol", { "class": "problems" }, round.problems.map(function (p, i) {
      var all = valid.length > 1 && valid.every(function (l) { return p.by.indexOf(l) !== -1; });
      var raised = all ? h("span", { "class": "tag both", text: "raised by " + who(p.by) + " (all reviewers)" })
        : h("span", { "class": "tag only", text: (p.by.length === 1 ? "only " : "raised by ") + who(p.by) + (p.by.length === 1 ? " raised this" : "") });
      return h("li", { id: "problem-" + round.n + "-" + (i + 1) },
        h("div", null, h("span", { "class": "num", text: i + 1 }), h("span", { "class": "issue", text: p.issue })),
        h("div", null, p.criteria.map(function (c, k) { return h("span", { "class": "tag", text: k ? c : c + " (primary)" }); }), raised,
          p.evidence === "unverified" ? h("span", { "class": "tag only", text: "quote not found in the output" }) : null),
        p.quotes.map(function (q) { return h("q", { "class": "quote" + (p.evidence === "unverified" ? " unverified" : ""), text: q }); }),
        p.missing ? h("span", { "class": "missing", text: "missing: " + p.missing }) : null,
        p.location ? h("div", { "class": "muted", text: "location: " + p.location }) : null);
    }));
  }

  function output(round) {
    var pre = h("pre", { "class": "output" });
    var text = round.output, at = 0;
    (round.marks || []).forEach(function (m) {
      if (m[0] > at) pre.appendChild(document.createTextNode(text.slice(at, m[0])));
      pre.appendChild(h("mark", { "class": m[2].length > 1 ? "many" : null, title: "problem " + m[2].join(", ") },
        text.slice(m[0], m[1]), h("sup", { text: m[2].join(",") })));
      at = m[1];
    });
    pre.appendChild(document.createTextNode(text.slice(at)));
    return pre;
  }

  function fix(f) {
    var lines = f.notes.split("\n").filter(function (l) { return l.trim(); });
    var said = facts(f);
    return h("div", { "class": "fix" }, h("h3", null, "The fixer's report", said ? h("span", { "class": "facts", text: said }) : null),
      lines.length ? h("ol", null, lines.map(function (l) { return h("li", { text: l.replace(/^\s*\d+\s*[.)]\s*/, "") }); }))
        : h("p", { "class": "muted", text: "The fixer left no notes." }),
      f.questions.map(function (q) { return h("div", { "class": "question", text: "Needs input from a person: " + q }); }),
      f.notes ? h("details", { "class": "reply" }, h("summary", { text: "The fixer's reply, as it came back" }), h("pre", { "class": "raw", text: f.notes })) : null);
  }

  // -- a batch's page ----------------------------------------------------------------------

  function interval(label, e) {
    if (!e) return null;
    var w = 300, lo = e.interval ? e.interval[0] : null, hi = e.interval ? e.interval[1] : null;
    var svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("viewBox", "0 0 " + w + " 22");
    function rect(cls, x, width) {
      var r = document.createElementNS("http://www.w3.org/2000/svg", "rect");
      r.setAttribute("class", cls); r.setAttribute("x", x); r.setAttribute("y", cls === "point" ? 3 : 7);
      r.setAttribute("width", Math.max(width, 2)); r.setAttribute("height", cls === "point" ? 16 : 8);
      svg.appendChild(r);
    }
    rect("track", 0, w);
    if (lo != null) rect("range", lo * w, (hi - lo) * w);
    if (typeof e.rate === "number") rect("point", e.rate * w - 1, 2);
    var words = e.defects + " of " + e.sampled + " sampled items failed" +
      (lo != null ? "; defect rate " + pct(lo) + " to " + pct(hi) + " at " + pct(e.confidence) + " confidence" : "; no interval (stratified sample)");
    return h("div", { "class": "interval" }, h("b", { text: label }), svg, h("span", { text: words }));
  }

  function batchPage(b) {
    var d = b.detail;
    var out = [h("p", null, h("a", { href: "#", text: "← all runs and batches" })),
      h("h1", null, "Batch ", h("span", { "class": "mono", text: b.id }), badge(b.verdict)),
      h("div", { "class": "meta" },
        h("span", null, "items ", h("b", { text: b.population })),
        h("span", null, "verified with the full loop ", h("b", { text: b.reviewed })),
        h("span", null, "samples ", h("b", { text: b.samples })),
        h("span", null, "cost ", h("b", { text: money(b.cost) })),
        d && d.cost_share != null ? h("span", null, "cost against verifying every item ", h("b", { text: pct(d.cost_share) })) : null,
        d && d.seed != null ? h("span", null, "seed ", h("b", { text: d.seed })) : null,
        h("span", null, "created ", h("b", { text: when(b.created) })))];
    if (!d) return out.concat([h("p", { "class": "notice", text: "The batch's state could not be read: " + b.problem })]);
    out.push(section("Guarantee", h("p", { text: d.guarantee || (b.verdict === "open" ? "None yet: the batch has no verdict." : "none") }),
      interval("as generated", d.estimate), interval("after fixes", d.estimate_after_fixes),
      d.estimate_statement ? h("p", { "class": "muted", text: d.estimate_statement }) : null,
      d.reasons.length ? list(d.reasons) : null, d.warnings.map(function (w) { return h("p", { "class": "notice", text: w }); })));
    var fails = Object.keys(d.failures);
    out.push(section("Failures by criterion (first round of each verified item)", fails.length ? h("table", null,
      h("thead", null, h("tr", null, h("th", { text: "criterion" }), h("th", { "class": "num", text: "items" }), h("th", { text: "which" }))),
      h("tbody", null, fails.map(function (c) {
        return h("tr", null, h("td", null, c, d.systemic.indexOf(c) !== -1 ? h("span", { "class": "tag only", text: "systemic" }) : null),
          h("td", { "class": "num", text: d.failures[c].length }), h("td", { "class": "mono", text: d.failures[c].join(", ") }));
      }))) : h("p", { "class": "muted", text: "No verified item failed." })));
    if (d.strata.length) {
      out.push(section("Strata", h("table", null, h("thead", null, h("tr", null, ["stratum", "items", "sampled", "failed"].map(function (t) { return h("th", { text: t }); }))),
        h("tbody", null, d.strata.map(function (s) { return h("tr", null, h("td", { text: s.name }), h("td", { text: s.items }), h("td", { text: s.sampled }), h("td", { text: s.failed })); })))));
    }
    d.samples.forEach(function (s) { out.push(sampleBox(s)); });
    return out;
  }

  function sampleBox(s) {
    return h("div", { "class": "round" }, h("h2", null, "Sample " + s.number, s.decision ? h("span", { "class": "muted", text: "decision: " + s.decision.step }) : null),
      h("p", { text: s.statement || "" }),
      s.decision && s.decision.reasons.length ? h("ul", { "class": "reasons" }, s.decision.reasons.map(function (t) { return h("li", { text: t }); })) : null,
      s.screens.map(function (sc) {
        return h("div", { "class": "fix" }, h("b", { text: "Screen for " + sc.criterion + ": " }),
          sc.clean + " clean, " + sc.flagged + " flagged (" + sc.fixed + " fixed), " + sc.unusable + " without a usable answer",
          sc.flagged_items.length ? h("div", { "class": "mono muted", text: "flagged: " + sc.flagged_items.map(function (f) { return f.item + (f.fixed ? " (fixed)" : ""); }).join(", ") }) : null);
      }),
      s.skipped.length ? h("p", { "class": "notice", text: "Not verified (budget): " + s.skipped.join(", ") }) : null,
      h("table", null, h("thead", null, h("tr", null, ["item", "status", "first-round failures", "rounds", "cost", "run"].map(function (t) { return h("th", { text: t }); }))),
        h("tbody", null, s.items.map(function (i) {
          return h("tr", null, h("td", { "class": "mono", text: i.item }),
            h("td", null, badge(i.status), i.reason ? " " + i.reason : ""),
            h("td", { text: i.criteria.join(", ") }), h("td", { text: i.rounds == null ? "" : i.rounds }),
            h("td", { text: i.cost == null ? "" : money(i.cost) }),
            h("td", { "class": "mono" }, i.run ? (runs.has(i.run) ? runLink(i.run) : i.run) : ""));
        }))));
  }

  // -- routing -------------------------------------------------------------------------------

  function route() {
    var hash = decodeURIComponent(location.hash.slice(1));
    var overview = document.getElementById("overview"), page = document.getElementById("page");
    var kind = hash.split("/")[0], id = hash.slice(kind.length + 1);
    var shown = null;
    if (kind === "run" && runs.has(id)) shown = runPage(runs.get(id));
    else if (kind === "batch" && batches.has(id)) shown = batchPage(batches.get(id));
    else if (kind === "run" || kind === "batch") shown = [h("p", null, h("a", { href: "#", text: "← all runs and batches" })), h("p", { "class": "notice", text: "This page has no " + kind + " " + id + "." })];
    if (shown) {
      page.replaceChildren();
      add(page, shown);
      overview.hidden = true; page.hidden = false;
      window.scrollTo(0, 0);
    } else {
      page.hidden = true; overview.hidden = false;
    }
    document.title = shown ? "santa view: " + kind + " " + id : "santa view";
  }
  drawTable();
  window.addEventListener("hashchange", route);
  route();
})();
