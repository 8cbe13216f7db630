"""The notice of violation: its data, remedy deadline, appeal, penalties and citations from the profile.

:func:`notice_of_violation` drafts a written notice to a parcel's landowner;
:class:`Notice` holds every field (``to_dict()``, the JSON document) and prints itself
as a one-page letter (``to_html()``).
"""

from __future__ import annotations

import datetime as _dt
import html
import re
import warnings as _warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..core.calendar import last_day
from ..core.errors import DataError, UsageError
from ..core.nulls import is_na
from ..core.schema import PATH_COLUMNS
from ..rules.profiles import Profile, load_profile, remedy_deadline
from ._shared import _failure_text, _text

if TYPE_CHECKING:
    from ..io import Workspace
    from ..pipeline import PipelineResult

__all__ = ["VIOLATIONS", "Notice", "notice_of_violation"]

#: Violation codes -> (label, citation rule in the profile, default remedial measures).
VIOLATIONS: dict[str, dict[str, Any]] = {
    "failing_septic": {
        "label": "Operating a failing individual sewage treatment system in an area "
        "tributary to the MS4",
        "rules": ("septic_failing",),
        "remedy": [
            "Stop the discharge: have the septic tank pumped and the system inspected by "
            "a licensed professional.",
            "Repair or replace the individual sewage treatment system in accordance with "
            "10 NYCRR Appendix 75-A, with any permit the county health department requires.",
            "Send the officer written proof of the inspection and of the repair.",
        ],
        "extra_rules": ("septic_repair",),
    },
    "illicit_connection": {
        "label": "Illicit connection to the MS4",
        "rules": ("illicit_connection",),
        "remedy": [
            "Disconnect every line that conveys sewage or other non-stormwater to the "
            "storm sewer, and connect it to the sanitary sewer or an approved on-site "
            "system.",
            "Let the officer confirm the disconnection (dye test or inspection).",
            "Clean up any material the connection released and restore the affected property.",
        ],
        "extra_rules": (),
    },
    "illicit_discharge": {
        "label": "Illicit discharge to the MS4 (a discharge that is not entirely stormwater)",
        "rules": ("illicit_discharge",),
        "remedy": [
            "Cease and desist the discharge.",
            "Abate and remediate the pollution and restore the affected property.",
            "Put in place source control or treatment practices so that the discharge "
            "does not recur, and tell the officer in writing what was done.",
        ],
        "extra_rules": (),
    },
}


@dataclass
class Notice:
    """A written notice of violation (see :func:`notice_of_violation`).

    ``to_dict()`` gives every field as JSON-ready values; ``to_html()`` a printable
    one-page letter.
    """

    parcel_id: str
    address: str
    owner: str
    owner_address: str
    violation: str
    violation_label: str
    finding: str
    drainage: list[dict[str, Any]]
    drainage_text: str
    remedial_measures: list[str]
    issued: _dt.date
    deadline: _dt.date | None
    remedy_period: str
    appeal: dict[str, Any]
    appeal_text: str
    penalties: list[dict[str, Any]]
    penalty_text: str
    citations: list[dict[str, Any]]
    officer_title: str
    municipality: str
    law: str
    profile: str
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k in self.__dataclass_fields__:
            v = getattr(self, k)
            if isinstance(v, (_dt.date, _dt.datetime)):
                v = v.isoformat()
            out[k] = v
        out["document"] = "ms4map.notice_of_violation"
        out["version"] = 1
        return out

    def deadline_text(self) -> str:
        if self.deadline is None:
            return f"{self.remedy_period} (deadline: ______________________)"
        when = self.deadline.strftime("%B %d, %Y").replace(" 0", " ")
        return f"{when} ({self.remedy_period})"

    def to_html(self) -> str:
        """A printable one-page notice (US Letter, inline CSS, no external files)."""
        e = html.escape
        issued = self.issued.strftime("%B %d, %Y").replace(" 0", " ")
        measures = "".join(f"<li>{e(m)}</li>" for m in self.remedial_measures)
        cites = "".join(f"<li>{e(c['text'])}</li>" for c in self.citations)
        warn = ""
        if self.warnings:
            warn = (
                '<div class="warn"><b>Before sending (not part of the notice):</b><ul>'
                + "".join(f"<li>{e(w)}</li>" for w in self.warnings)
                + "</ul></div>"
            )
        return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Notice of violation - {e(self.parcel_id)}</title>
<style>
@page {{ size: letter; margin: 0.6in; }}
body {{ font-family: Georgia, 'Times New Roman', serif; font-size: 10pt; line-height: 1.3;
       max-width: 7.3in; margin: 0 auto; color: #000; }}
h1 {{ font-size: 14pt; text-align: center; margin: 0 0 2pt 0; }}
h2 {{ font-size: 10.5pt; margin: 8pt 0 2pt 0; }}
p, ul {{ margin: 2pt 0; }}
ul {{ padding-left: 16pt; }}
.head {{ text-align: center; margin-bottom: 6pt; }}
.cols {{ display: flex; justify-content: space-between; }}
.cite {{ font-size: 8.5pt; }}
.sig {{ margin-top: 14pt; }}
.warn {{ border: 1px dashed #a00; padding: 4pt; font-size: 8.5pt; color: #a00; }}
@media print {{ .warn {{ display: none; }} }}
</style></head><body>
{warn}
<div class="head"><b>{e(self.municipality)}</b><br>{e(self.law)}</div>
<h1>NOTICE OF VIOLATION</h1>
<div class="cols"><div><b>To:</b> {e(self.owner)}<br>{e(self.owner_address)}</div>
<div><b>Date issued:</b> {e(issued)}</div></div>
<h2>Property</h2>
<p>Parcel {e(self.parcel_id)}, {e(self.address)}</p>
<h2>Nature of the violation</h2>
<p>{e(self.violation_label)}. {e(self.finding)}</p>
<h2>Drainage path</h2>
<p>{e(self.drainage_text)}</p>
<h2>Required remedial measures and schedule</h2>
<ul>{measures}</ul>
<p><b>Complete by:</b> {e(self.deadline_text())}. Should the work not be done by then, it
may be done by the municipality or its contractor at your expense.</p>
<h2>Appeal</h2>
<p>{e(self.appeal_text)}</p>
<h2>Penalties</h2>
<p>{e(self.penalty_text)}</p>
<h2>Authority</h2>
<ul class="cite">{cites}</ul>
<div class="sig">
<p>______________________________________</p>
<p>{e(self.officer_title)}, {e(self.municipality)}</p>
<p>Name: ______________________ &nbsp; Telephone: ________________ &nbsp; Date: {e(issued)}</p>
</div>
</body></html>
"""


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _appeal_text(prof: Profile, issued: _dt.date) -> tuple[dict[str, Any], str]:
    enf = prof.enforcement
    keys = (
        "appeal_days",
        "appeal_body",
        "appeal_hearing_days",
        "decision_filed_days",
        "corrective_business_days",
    )
    appeal = {k: enf.get(k) for k in keys}
    days, body = enf.get("appeal_days"), enf.get("appeal_body")
    if not _num(days):
        return appeal, (
            f"The {prof.law} states no appeal period for this notice "
            f"(profile setting appeal_days: {days!r}). Ask the {prof.officer_title} how "
            "to contest it."
        )
    parts = [
        f"You may appeal this determination of the {prof.officer_title} to the "
        f"{body if isinstance(body, str) and 'not stated' not in body else 'municipality'} "
        f"within {int(days)} days of its issuance, that is by "
        f"{_long_date(last_day(issued + _dt.timedelta(days=int(days))))}."
    ]
    if _num(enf.get("appeal_hearing_days")):
        parts.append(
            f"The appeal is heard within {int(enf['appeal_hearing_days'])} days of its filing"
            + (
                f", and the decision is filed within {int(enf['decision_filed_days'])} days "
                "of being made."
                if _num(enf.get("decision_filed_days"))
                else "."
            )
        )
    if _num(enf.get("corrective_business_days")):
        parts.append(
            "If the appeal upholds this notice, the violation must be corrected within "
            f"{int(enf['corrective_business_days'])} business days of that decision."
        )
    return appeal, " ".join(parts)


def _penalty_text(prof: Profile) -> tuple[list[dict[str, Any]], str]:
    enf = prof.enforcement
    pens = [dict(p) for p in enf.get("penalties", [])]
    ords = {1: "First offence", 2: "Second offence", 3: "Third or later offence"}
    bits = []
    for p in sorted(pens, key=lambda p: int(p.get("offence", 0))):
        lo, hi = p.get("min_usd", 0) or 0, p.get("max_usd")
        money = f"a fine of ${lo:,.0f} to ${hi:,.0f}" if lo else f"a fine of up to ${hi:,.0f}"
        bits.append(
            f"{ords.get(int(p.get('offence', 0)), 'Offence ' + str(p.get('offence')))}: {money}"
        )
    text = "; ".join(bits) + "."
    imp = enf.get("imprisonment")
    if isinstance(imp, str) and imp and "not stated" not in imp:
        text += f" Each offence may instead or also be punished by imprisonment of up to {imp}."
    per = enf.get("penalty_period")
    if isinstance(per, str) and per:
        text += f" Each {per}'s continued violation is a separate additional violation."
    return pens, text


def _drainage_path(
    result: PipelineResult | None, pid: str
) -> tuple[list[dict[str, Any]], str, list[str]]:
    d = getattr(result, "drainage", None) if result is not None else None
    if d is None:
        return (
            [],
            "Not determined: the drainage analysis was not run.",
            ["No drainage path: pass result= (ms4map.pipeline.run) to state it."],
        )
    rows = d[d["parcel_id"].astype(str) == pid]
    recs: list[dict[str, Any]] = []
    texts: list[str] = []
    for r in rows.sort_values("fraction", ascending=False).to_dict("records"):
        rec = {k: (None if is_na(r.get(k)) else r.get(k)) for k in PATH_COLUMNS}
        recs.append(rec)
        share = f"{float(rec['fraction'] or 0):.0%} of the property's runoff"
        water = _text(rec["receiving_water"])
        pwl = _text(rec["pwl_id"])
        wtxt = f"{water} (NYSDEC PWL {pwl})" if pwl else (water or "an unnamed water")
        kind = rec["target_kind"]
        if kind in ("inlet", "conveyance") and rec["outfall_id"]:
            via = "storm inlet" if kind == "inlet" else "MS4 conveyance"
            texts.append(
                f"{share} enters {via} {rec['target_id']}, then the municipal separate storm "
                f"sewer system (MS4) to outfall {rec['outfall_id']}, which discharges to {wtxt}"
            )
        elif kind in ("inlet", "conveyance"):
            texts.append(f"{share} enters the MS4 at {rec['target_id']} (outfall not traced)")
        elif kind == "water_direct":
            texts.append(f"{share} runs directly to {wtxt}, outside the MS4")
        elif kind == "depression":
            texts.append(f"{share} collects in a closed depression (internally drained)")
        else:
            texts.append(f"{share}: drainage not determined ({kind})")
    warns = []
    if not recs:
        warns.append("The drainage table has no row for this parcel.")
        return recs, "Not determined: the parcel has no row in the drainage table.", warns
    if not any(r["target_kind"] in ("inlet", "conveyance") for r in recs):
        warns.append(
            "None of this parcel's runoff reaches the MS4 in the drainage analysis: check "
            "that the law applies (areas tributary to the MS4) before sending."
        )
    return recs, "; ".join(texts) + ".", warns


def notice_of_violation(
    result: PipelineResult | None = None,
    parcel_id: str | None = None,
    /,
    *,
    violation: str,
    workspace: Workspace | None = None,
    profile: str | Profile | None = "stillwater",
    remedy: list[str] | str | None = None,
    issued: _dt.date | str | None = None,
    deadline: _dt.date | str | None = None,
    finding: str | None = None,
    **old_form: Any,
) -> Notice:
    """Draft a written notice of violation to a parcel's landowner.

    The notice names the landowner and mailing address, the property, the nature of
    the violation (for ``failing_septic`` the recorded failure condition), the
    drainage path to the MS4 outfall and receiving water (from ``result.drainage``),
    the remedial measures and the deadline, appeal rights and the penalty schedule,
    all from the municipality profile, with its citations (law name, section only
    where the text prints one, quote), the officer's title and a signature block.

    The old form ``notice_of_violation(parcel_id, *, violation, result=None,
    workspace, ...)`` still works, with a :class:`DeprecationWarning`.

    Parameters
    ----------
    result : PipelineResult or None
        For the drainage path (``None``: the notice says the path was not determined)
        and the workspace.
    parcel_id : str
    violation : {"failing_septic", "illicit_connection", "illicit_discharge"}
    workspace : Workspace, optional
        Parcels with ``owner``, ``owner_address``, ``address``, ``septic_failure``;
        defaults to ``result.workspace``.
    profile : str or Profile
        Municipality profile (officer, periods, penalties, citations).
    remedy : list of str or str, optional
        Remedial measures; default: those of :data:`VIOLATIONS` for the code.
    issued : date or ISO string, optional
        Date of issue; default today.
    deadline : date or ISO string, optional
        Deadline for the remedy.  Default: ``issued`` plus the profile's remedy
        period when it is given in hours or days (Kingsbury: 48 hours), else left
        blank for the officer to fill in (Stillwater: "the deadline set in the notice
        of violation").
    finding : str, optional
        What the officer found (added to the nature of the violation).

    Returns
    -------
    Notice

    Raises
    ------
    UsageError
        Unknown violation code or malformed date.
    DataError
        Parcel id not in the parcels layer, or no parcels layer; a ``deadline`` before
        ``issued`` (as the records refuse a ``remedy_deadline`` before the notice).
    """
    result, parcel_id = _result_and_parcel(result, parcel_id, old_form)
    if violation not in VIOLATIONS:
        raise UsageError(f"Unknown violation {violation!r}: select from {list(VIOLATIONS)}.")
    prof = load_profile(profile)
    pid, rec = _notice_parcel(workspace, result, str(parcel_id))
    warnings: list[str] = []
    owner, owner_address, address = _owner_and_address(rec, warnings)
    issued_d = _as_date(issued, "issued") or _dt.date.today()
    spec = VIOLATIONS[violation]
    nature = _nature_of_violation(violation, rec, finding, warnings)
    drainage, drainage_text, dwarn = _drainage_path(result, pid)
    warnings += dwarn
    measures = [remedy] if isinstance(remedy, str) else list(remedy or spec["remedy"])
    dl, remedy_period = _remedy_deadline(prof, issued_d, deadline, warnings)
    appeal, appeal_text = _appeal_text(prof, issued_d)
    penalties, penalty_text = _penalty_text(prof)
    return Notice(
        parcel_id=pid,
        address=address,
        owner=owner,
        owner_address=owner_address,
        violation=violation,
        violation_label=spec["label"],
        finding=nature,
        drainage=drainage,
        drainage_text=drainage_text,
        remedial_measures=measures,
        issued=issued_d,
        deadline=dl,
        remedy_period=remedy_period,
        appeal=appeal,
        appeal_text=appeal_text,
        penalties=penalties,
        penalty_text=penalty_text,
        citations=_notice_citations(prof, spec, warnings),
        officer_title=prof.officer_title,
        municipality=prof.municipality,
        law=prof.law,
        profile=prof.name,
        warnings=warnings,
    )


def _result_and_parcel(first: Any, second: Any, old: dict[str, Any]) -> tuple[Any, Any]:
    """``(result, parcel_id)`` of a call of :func:`notice_of_violation`, in the new form
    ``(result, parcel_id, ...)``, by keywords, or in the old form ``(parcel_id, *,
    result=None, ...)`` (with a :class:`DeprecationWarning`)."""
    unknown = sorted(set(old) - {"result", "parcel_id"})
    if unknown:
        raise TypeError(f"notice_of_violation() got an unexpected keyword argument {unknown[0]!r}")
    if second is not None:  # notice_of_violation(result, parcel_id, ...)
        if old:
            raise TypeError(f"notice_of_violation() got multiple values for {sorted(old)}")
        return first, second
    if "parcel_id" in old:  # the parcel by keyword (both forms)
        if "result" in old and first is not None:
            raise TypeError("notice_of_violation() got multiple values for 'result'")
        return old.get("result", first), old["parcel_id"]
    if first is None or hasattr(first, "drainage"):
        raise TypeError("notice_of_violation() missing the parcel id: give (result, parcel_id)")
    _warnings.warn(
        "notice_of_violation(parcel_id, *, result=..., workspace=...) is deprecated; "
        "use notice_of_violation(result, parcel_id, *, ...) (workspace= defaults to "
        "result.workspace).",
        DeprecationWarning,
        stacklevel=3,
    )
    return old.get("result"), first


def _notice_parcel(
    workspace: Workspace | None, result: PipelineResult | None, pid: str
) -> tuple[str, pd.Series]:
    """The parcel's row in the parcels layer (of ``workspace``, else of the result's)."""
    ws = workspace if workspace is not None else getattr(result, "workspace", None)
    parcels = None if ws is None else ws.layers.get("parcels")
    if parcels is None:
        raise DataError("A notice needs the parcels layer (owner and address): pass workspace=.")
    hit = parcels[parcels["parcel_id"].astype(str) == pid]
    if not len(hit):
        sample = ", ".join(parcels["parcel_id"].astype(str).head(3))
        raise DataError(
            f"Parcel '{pid}' is not in the parcels layer ({len(parcels)} parcels, e.g. "
            f"{sample}). Fix: check the parcel_id (ids are case-sensitive)."
        )
    return pid, hit.iloc[0]


def _owner_and_address(rec: pd.Series, warnings: list[str]) -> tuple[str, str, str]:
    """Owner, owner's mailing address (a blank line to fill in, with a warning, when
    missing) and the property's street address."""

    def need(col: str, what: str) -> str:
        v = _text(rec.get(col))
        if not v:
            warnings.append(f"The parcel has no {what} (column '{col}'): fill it in by hand.")
            return "______________________"
        return v

    owner = need("owner", "owner name")
    owner_address = need("owner_address", "owner mailing address")
    address = _text(rec.get("address")) or "(no street address recorded)"
    return owner, owner_address, address


def _nature_of_violation(
    violation: str, rec: pd.Series, finding: str | None, warnings: list[str]
) -> str:
    """What was found: the recorded septic failure (for ``failing_septic``) and the
    officer's ``finding``."""
    bits: list[str] = []
    if violation == "failing_septic":
        fail = _failure_text(rec.get("septic_failure"))
        if fail:
            bits.append(f"Recorded failure condition: {fail}.")
        elif not finding:
            warnings.append(
                "No failure condition is recorded for this parcel (column 'septic_failure'): "
                "state what was found (finding=)."
            )
        if _text(rec.get("sewer")) and _text(rec.get("sewer")) != "septic":
            warnings.append(f"The parcels layer says sewer = '{_text(rec.get('sewer'))}'.")
    if finding:
        bits.append(finding.strip())
    return " ".join(bits)


def _remedy_deadline(
    prof: Profile, issued: _dt.date, deadline: Any, warnings: list[str]
) -> tuple[_dt.date | None, str]:
    """The deadline (given, else ``issued`` plus the profile's remedy period when it is in
    hours or days, moved past a Saturday, Sunday or public holiday as General
    Construction Law section 25-a allows: the date the case records keep too) and the
    profile's remedy period as written."""
    enf = prof.enforcement
    # else the profile's own period, from service, which the officer dates
    given = _as_date(deadline, "deadline")
    if given is not None and given < issued:
        raise DataError(
            f"deadline = {given.isoformat()} is before the notice's issue date "
            f"({issued.isoformat()}): the owner could never meet it. Fix: give a deadline on "
            "or after the issue date (or leave deadline out for the profile's remedy period)."
        )
    dl = given or remedy_deadline(prof, issued)
    remedy_period = str(enf.get("remedy_period", ""))
    if dl is None:
        warnings.append(
            f"The profile's remedy period is '{remedy_period}': set the remedy deadline of "
            "this notice (the Remedy deadline box in the app; deadline= in Python, --deadline "
            "on the command line), or the notice leaves it blank."
        )
    return dl, remedy_period


def _notice_citations(
    prof: Profile, spec: dict[str, Any], warnings: list[str]
) -> list[dict[str, Any]]:
    """The citations of the violation's rules, then of the notice, remedy period, appeal
    and penalty provisions (each with its text)."""
    rules = list(spec["rules"])
    found = [c for r in rules for c in prof.cite(r)]
    if not found:
        warnings.append(
            f"The profile '{prof.name}' has no citation for rule(s) {rules}: the notice "
            "cites only the notice-of-violation provision."
        )
    for law in dict.fromkeys(str(c.law) for c in found if _borrowed(prof, str(c.law))):
        warnings.append(
            f"The notice cites {law} for the violation: not {prof.municipality}'s own law. "
            f"Check {prof.municipality}'s own section (and its profile's citations) before "
            "serving it."
        )
    cites: list[dict[str, Any]] = []
    notice_rules = ["notice_of_violation", "remedy_period", "appeal", "penalties"]
    for rule in rules + list(spec["extra_rules"]) + notice_rules:
        for c in prof.cite(rule):
            d = c.to_dict()
            d["text"] = c.text()
            cites.append(d)
    return cites


def _borrowed(prof: Profile, law: str) -> bool:
    """Whether a citation's ``law`` is another municipality's (a profile may borrow model
    wording where the town's own text is not at hand): its name is not in the law's."""
    name = re.sub(r"^(town|village|city|county) of\s+", "", prof.municipality.strip(), flags=re.I)
    return bool(name) and name.lower() not in law.lower()


def _long_date(d: _dt.date) -> str:
    """``Monday, June 23, 2025``: a date as a letter writes it."""
    return f"{d.strftime('%A, %B')} {d.day}, {d.year}"


def _as_date(value: Any, name: str) -> _dt.date | None:
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    try:
        return _dt.date.fromisoformat(str(value))
    except ValueError:
        raise UsageError(f"{name} = {value!r}: give a date as YYYY-MM-DD.") from None
