// Gatehouse console: the little the pages do in the browser. Every page
// works without it but for the charts; the Content-Security-Policy allows
// no inline script, so everything is wired here from data- attributes.
"use strict";

(function () {
  // Copy buttons: data-copy names the id of the element whose text to copy.
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", function () {
      var source = document.getElementById(button.dataset.copy);
      if (!source) return;
      var text = source.value !== undefined ? source.value : source.textContent;
      var done = function () {
        var label = button.textContent;
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = label; }, 1500);
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text.trim()).then(done, function () { select(source); });
      } else {
        select(source);
        document.execCommand("copy") && done();
      }
    });
  });

  function select(el) {
    if (el.select) { el.select(); return; }
    var range = document.createRange();
    range.selectNodeContents(el);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  }

  // A form shown again with errors puts the focus on the first field in
  // error, whose message its aria-describedby names.
  var invalid = document.querySelector('[aria-invalid="true"]');
  if (invalid) invalid.focus();

  // Forms with data-confirm ask before they are sent.
  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  });

  // Charts: <canvas data-chart="ID"> draws the JSON of the
  // <script type="application/json" id="ID"> beside it: {labels, series:
  // [{label, values}], money}, as stacked bars.
  var palette = ["#2453c7", "#e07b39", "#1b9e77", "#c0392b", "#7b61c9", "#d4a017", "#3aa0c8", "#8c8c8c", "#b5467b"];
  document.querySelectorAll("canvas[data-chart]").forEach(function (canvas) {
    var source = document.getElementById(canvas.dataset.chart);
    if (!source || typeof Chart === "undefined") return;
    var data = JSON.parse(source.textContent);
    var money = function (v) {
      return data.money ? "$" + Number(v).toLocaleString("en-US", { maximumFractionDigits: v < 1 ? 6 : 2 }) : Number(v).toLocaleString("en-US");
    };
    new Chart(canvas, {
      type: "bar",
      data: {
        labels: data.labels,
        datasets: data.series.map(function (s, i) {
          return { label: s.label, data: s.values, backgroundColor: palette[i % palette.length], borderWidth: 0 };
        })
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        interaction: { mode: "index", intersect: false },
        scales: {
          x: { stacked: true, ticks: { maxRotation: 0, autoSkip: true, maxTicksLimit: 8 }, grid: { display: false } },
          y: { stacked: true, beginAtZero: true, ticks: { callback: money, maxTicksLimit: 6 } }
        },
        plugins: {
          legend: { position: "bottom", labels: { boxWidth: 12, boxHeight: 12 } },
          tooltip: { callbacks: { label: function (c) { return c.dataset.label + ": " + money(c.parsed.y); } } }
        }
      }
    });
    canvas.dataset.drawn = "true";
  });
})();
