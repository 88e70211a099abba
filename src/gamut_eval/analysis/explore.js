(function(){
"use strict";
var node=document.getElementById("gamut-data"),app=document.getElementById("explore-app");
if(!node||!app)return;
var D=JSON.parse(node.textContent),S=D.settings,J=D.judges,M=D.models,Q=D.questions;
var NS=S.length,NJ=J.length,NM=M.length;
var NAMES={M:"meets",P:"partially meets",O:"missing",C:"contradicts",U:"unscored",".":"not judged"};
var TIERS={answer_critical:"answer-critical",valuable:"valuable",context:"context"};
var F={search:"",domain:"",popularity:"",tier:"",verdict:"",sort:"id",csort:"order",shown:100};
function h(tag,attrs){var e=document.createElement(tag),k,i,c;
 for(k in attrs||{}){if(k==="text")e.textContent=attrs[k];else if(k==="cls")e.className=attrs[k];
  else if(k.slice(0,2)==="on")e.addEventListener(k.slice(2),attrs[k]);else e.setAttribute(k,attrs[k]);}
 for(i=2;i<arguments.length;i++){c=arguments[i];if(c==null)continue;
  e.appendChild(typeof c==="string"?document.createTextNode(c):c);}return e;}
function fmt(v){return v==null?"\u2014":v.toFixed(1);}
function score(q,s,j,m){if(!q.scores.length)return null;var v=q.scores[(s*NJ+j)*NM+m];return v==null?null:v/10;}
function cell(q,s,j,m,c){return ((s*NJ+j)*NM+m)*q.checks.length+c;}
function code(q,s,j,m,c){return q.verdicts.charAt(cell(q,s,j,m,c));}
function expl(q,s,j,m,c){if(!q.explanations)return null;var i=q.explanations[cell(q,s,j,m,c)];return i<0?"":q.texts[i];}
function answer(q,s,m){if(!q.answers)return null;var i=q.answers[s*NM+m];return i<0?null:q.texts[i];}
function judgeSpread(q,m){var best=null,s,j,v,lo,hi;for(s=0;s<NS;s++){lo=null;hi=null;
 for(j=0;j<NJ;j++){v=score(q,s,j,m);if(v==null)continue;lo=lo==null?v:Math.min(lo,v);hi=hi==null?v:Math.max(hi,v);}
 if(lo!=null&&NJ>1)best=Math.max(best==null?0:best,hi-lo);}return best;}
function settingGap(q,m){if(NS<2)return null;var a=score(q,0,0,m),b=score(q,1,0,m);return a==null||b==null?null:Math.abs(b-a);}
function scored(ch){return "MPOC".indexOf(ch)>=0;}
function checkJudgeDis(q,m,c){var n=0,s,j,seen;for(s=0;s<NS;s++){seen={};
 for(j=0;j<NJ;j++){var v=code(q,s,j,m,c);if(scored(v))seen[v]=1;}n+=Math.max(Object.keys(seen).length-1,0);}return n;}
function checkSettingDis(q,m,c){if(NS<2)return 0;var n=0,j,a,b;for(j=0;j<NJ;j++){a=code(q,0,j,m,c);b=code(q,1,j,m,c);
 if(scored(a)&&scored(b)&&a!==b)n++;}return n;}
function link(text,hash){return h("a",{href:hash,text:text});}
function mh(m){return "#explore/m/"+m;}
function qh(m,q){return mh(m)+"/q/"+q;}
function select(label,key,options,render){var s=h("select",{"aria-label":label,onchange:function(){F[key]=s.value;F.shown=100;render();}});
 options.forEach(function(o){var opt=h("option",{value:o[0],text:o[1]});if(F[key]===o[0])opt.selected=true;s.appendChild(opt);});
 return h("label",null,label+" ",s);}
function uniq(key){var seen={},out=[];Q.forEach(function(q){var v=q[key];if(v&&!seen[v]){seen[v]=1;out.push(v);}});return out.sort();}
function opts(all,values,names){return [["",all]].concat(values.map(function(v){return [v,names?names[v]||v:v];}));}
function tierFilter(render){return select("tier","tier",opts("any tier",Object.keys(TIERS),TIERS),render);}
function verdictFilter(render){return select("verdict","verdict",opts("any verdict",["M","P","O","C","U"],NAMES),render);}
function verdictBadge(ch,tip){return h("span",{cls:"v v-"+ch,title:tip||NAMES[ch],text:ch==="."?"\u00b7":ch});}
function crumbs(m,q){var c=h("nav",{cls:"crumbs","aria-label":"drill-down path"},link("Leaderboard","#explore"));
 if(m!=null){c.appendChild(document.createTextNode("\u203a "));c.appendChild(link(M[m],mh(m)));}
 if(q!=null){c.appendChild(document.createTextNode(" \u203a "));c.appendChild(h("span",{text:Q[q].id}));}return c;}
function board(){var rows={},order=[];D.leaderboard.forEach(function(r){if(!(r.model in rows)){rows[r.model]={};order.push(r.model);}
 rows[r.model][r.setting+"\u0000"+r.judge]=r.gamut;});
 var cols=[];S.forEach(function(s){J.forEach(function(j){cols.push([s,j]);});});
 var head=h("tr",null,h("th",{text:"model"}));cols.forEach(function(c){head.appendChild(h("th",{cls:"num",text:c[0]+", "+c[1]}));});
 var body=h("tbody");order.forEach(function(model){var m=M.indexOf(model),tr=h("tr",null,h("td",null,m<0?model:link(model,mh(m))));
  cols.forEach(function(c){var v=rows[model][c[0]+"\u0000"+c[1]];tr.appendChild(h("td",{cls:"num",text:v==null?"\u2014":(100*v).toFixed(1)}));});body.appendChild(tr);});
 return [h("p",{cls:"intro",text:"Gamut score x100 of every model. Open a model to see its questions, a question to see its checks, a check to see every verdict and the judges' explanations."}),
  h("table",{"data-table":"explore-leaderboard"},h("thead",null,head),body)];}
var HAY={};
function hay(q,m){var base=HAY[q.id];if(base==null){base=HAY[q.id]=[q.id,q.entity,q.question,q.question_text_only].concat(q.checks.map(function(c){return c.text;})).join("\n").toLowerCase();}
 var own=[];for(var s=0;s<NS;s++){var a=answer(q,s,m);if(a)own.push(a);}return base+"\n"+own.join("\n").toLowerCase();}
function matches(q,m){var t=F.search.toLowerCase(),c,s,j,ok;
 if(t&&hay(q,m).indexOf(t)<0)return false;
 if(F.domain&&q.domain!==F.domain)return false;if(F.popularity&&q.popularity!==F.popularity)return false;
 if(!F.tier&&!F.verdict)return true;
 for(c=0;c<q.checks.length;c++){if(F.tier&&q.checks[c].tier!==F.tier)continue;if(!F.verdict)return true;
  for(s=0;s<NS;s++)for(j=0;j<NJ;j++)if(code(q,s,j,m,c)===F.verdict)return true;}return false;}
function sortKey(q,m){if(F.sort==="judges")return -(judgeSpread(q,m)||0);if(F.sort==="settings")return -(settingGap(q,m)||0);
 if(F.sort==="low"){var v=score(q,0,0,m);return v==null?1e9:v;}return 0;}
function modelView(m){var out=[crumbs(m,null),h("h3",{text:M[m]})],list=h("div");
 function render(){list.textContent="";var idx=[];Q.forEach(function(q,i){if(matches(q,m))idx.push(i);});
  if(F.sort!=="id"){var keys={};idx.forEach(function(i){keys[i]=sortKey(Q[i],m);});idx.sort(function(a,b){return keys[a]-keys[b]||a-b;});}
  list.appendChild(h("p",{cls:"meta",text:idx.length+" of "+Q.length+" questions"}));
  var head=h("tr",null,h("th",{text:"question"}),h("th",{text:"domain"}),h("th",{text:"popularity"}),h("th",{text:"text"}));
  S.forEach(function(s){head.appendChild(h("th",{cls:"num",text:s+" ("+J[0]+")"}));});
  head.appendChild(h("th",{cls:"num",text:"judge spread"}));head.appendChild(h("th",{cls:"num",text:"setting gap"}));
  var body=h("tbody");idx.slice(0,F.shown).forEach(function(i){var q=Q[i];
   var tr=h("tr",null,h("td",null,link(q.id,qh(m,i))),h("td",{text:q.domain||""}),h("td",{text:q.popularity||""}),h("td",{cls:"qtext",text:q.question||""}));
   for(var s=0;s<NS;s++)tr.appendChild(h("td",{cls:"num",text:fmt(score(q,s,0,m))}));
   tr.appendChild(h("td",{cls:"num",text:fmt(judgeSpread(q,m))}));tr.appendChild(h("td",{cls:"num",text:fmt(settingGap(q,m))}));body.appendChild(tr);});
  list.appendChild(h("table",{"data-table":"explore-questions"},h("thead",null,head),body));
  if(idx.length>F.shown)list.appendChild(h("button",{cls:"more",text:"Show more ("+(idx.length-F.shown)+" left)",onclick:function(){F.shown+=200;render();}}));}
 var search=h("input",{type:"search",placeholder:"search questions, checks, answers","aria-label":"search",value:F.search});
 search.addEventListener("input",function(){F.search=search.value;F.shown=100;render();});
 out.push(h("div",{cls:"filters"},search,select("domain","domain",opts("any domain",uniq("domain")),render),
  select("popularity","popularity",opts("any popularity",uniq("popularity")),render),tierFilter(render),verdictFilter(render),
  select("sort","sort",[["id","question id"],["low","lowest score first"],["judges","judge disagreement"],["settings","setting disagreement"]],render)));
 out.push(list);render();return out;}
function quotes(text){var out=[],re=/["\u201c\u201e\u00ab]([^"\u201c\u201d\u201e\u00ab\u00bb]{3,300})["\u201d\u00bb]/g,r;
 while((r=re.exec(text||"")))out.push(r[1].trim());return out;}
function marked(text,phrases){var p=h("p"),low=text.toLowerCase(),ranges=[];
 phrases.forEach(function(ph){var l=ph.toLowerCase(),i=l?low.indexOf(l):-1;while(i>=0){ranges.push([i,i+l.length]);i=low.indexOf(l,i+l.length);}});
 ranges.sort(function(a,b){return a[0]-b[0];});var at=0;
 ranges.forEach(function(r){if(r[0]<at)r[0]=at;if(r[1]<=r[0])return;p.appendChild(document.createTextNode(text.slice(at,r[0])));
  p.appendChild(h("mark",{text:text.slice(r[0],r[1])}));at=r[1];});p.appendChild(document.createTextNode(text.slice(at)));return p;}
function noTexts(){return h("p",{cls:"note",text:"The answers and explanations of this question are not in this page: the report embeds at most "+String(D.text_budget).replace(/\B(?=(\d{3})+(?!\d))/g,",")+" characters of texts ("+D.questions_with_texts+" of "+Q.length+" questions fit). They are in the run folder's verdicts.jsonl and responses.jsonl."});}
function questionView(m,qi,open){var q=Q[qi],out=[crumbs(m,qi),h("h3",{text:q.id+(q.entity?" \u2014 "+q.entity:"")})];
 var picker=h("select",{"aria-label":"model",onchange:function(){location.hash=qh(picker.value,qi)+(open!=null?"/c/"+open:"");}});
 M.forEach(function(name,i){var o=h("option",{value:String(i),text:name});if(i===m)o.selected=true;picker.appendChild(o);});
 var v=h("div",{cls:"variants"});if(q.image)v.appendChild(h("img",{src:q.image,alt:"image of question "+q.id,width:"160"}));
 v.appendChild(h("div",null,h("p",null,h("strong",{text:"With the image: "}),q.question||""),h("p",null,h("strong",{text:"Text only: "}),q.question_text_only||""),
  h("p",{cls:"meta",text:[q.domain,q.popularity].filter(Boolean).join(", ")})));out.push(v);
 if(q.rubric.length){var ul=h("ul");q.rubric.forEach(function(it){var li=h("li",null,h("span",{cls:"tier",text:TIERS[it.tier]||it.tier})," "+it.statement);
  if(it.elements.length)li.appendChild(h("span",{cls:"meta",text:": "+it.elements.join("; ")}));ul.appendChild(li);});
  out.push(h("details",{cls:"rubric"},h("summary",{text:"Meta-rubric ("+q.rubric.length+" items)"}),ul));}
 out.push(h("div",{cls:"filters"},h("label",null,"answers and verdicts of ",picker)));
 var phrases=[];if(open!=null)for(var s0=0;s0<NS;s0++)for(var j0=0;j0<NJ;j0++)phrases=phrases.concat(quotes(expl(q,s0,j0,m,open)));
 if(!q.answers)out.push(noTexts());else{var ans=h("div",{cls:"answers"});S.forEach(function(s,si){var t=answer(q,si,m);
  ans.appendChild(h("div",{cls:"answer","data-setting":s},h("strong",{text:s}),t==null?h("p",{cls:"note",text:"no answer in the run folder"}):marked(t,phrases)));});out.push(ans);}
 var table=h("div");function render(){table.textContent="";var idx=[];q.checks.forEach(function(c,i){
   if(F.tier&&c.tier!==F.tier)return;if(F.verdict){var hit=false;for(var s=0;s<NS;s++)for(var j=0;j<NJ;j++)if(code(q,s,j,m,i)===F.verdict)hit=true;if(!hit)return;}idx.push(i);});
  if(F.csort!=="order"){var f=F.csort==="judges"?checkJudgeDis:checkSettingDis;idx.sort(function(a,b){return f(q,m,b)-f(q,m,a)||a-b;});}
  var head=h("tr",null,h("th",{text:"check"}),h("th",{text:"tier"}));S.forEach(function(s){head.appendChild(h("th",{text:s+": "+J.join(" | ")}));});
  head.appendChild(h("th",{cls:"num",text:"judges disagree"}));head.appendChild(h("th",{cls:"num",text:"settings disagree"}));
  var body=h("tbody");idx.forEach(function(i){var c=q.checks[i],isOpen=i===open;
   var tr=h("tr",{cls:isOpen?"open":"","data-check":c.id},h("td",null,h("button",{cls:"check","aria-expanded":String(isOpen),text:c.id+": "+c.text,
    onclick:function(){location.hash=qh(m,qi)+(isOpen?"":"/c/"+i);}})),h("td",null,h("span",{cls:"tier",text:TIERS[c.tier]||c.tier||"?"})));
   for(var s=0;s<NS;s++){var td=h("td");for(var j=0;j<NJ;j++){var e=expl(q,s,j,m,i);td.appendChild(verdictBadge(code(q,s,j,m,i),J[j]+", "+S[s]+": "+NAMES[code(q,s,j,m,i)]+(e?" \u2014 "+e:"")));}tr.appendChild(td);}
   tr.appendChild(h("td",{cls:"num",text:String(checkJudgeDis(q,m,i))}));tr.appendChild(h("td",{cls:"num",text:String(checkSettingDis(q,m,i))}));body.appendChild(tr);
   if(isOpen)body.appendChild(h("tr",{cls:"detail"},h("td",{colspan:String(4+NS)},detail(q,m,i))));});
  table.appendChild(h("table",{"data-table":"explore-checks"},h("thead",null,head),body));}
 out.push(h("div",{cls:"filters"},tierFilter(render),verdictFilter(render),select("sort checks","csort",[["order","checklist order"],["judges","judge disagreement"],["settings","setting disagreement"]],render)));
 out.push(h("p",{cls:"legend meta"},verdictBadge("M")," meets ",verdictBadge("P")," partially meets ",verdictBadge("O")," missing ",verdictBadge("C")," contradicts ",verdictBadge("U")," unscored ",verdictBadge(".")," not judged"));
 out.push(table);render();return out;}
function detail(q,m,c){var body=h("tbody"),order=[m];for(var i=0;i<NM;i++)if(i!==m)order.push(i);
 order.forEach(function(mi){for(var s=0;s<NS;s++)for(var j=0;j<NJ;j++){var ch=code(q,s,j,mi,c),e=expl(q,s,j,mi,c);
  body.appendChild(h("tr",{cls:mi===m?"self":""},h("td",{text:M[mi]}),h("td",{text:S[s]}),h("td",{text:J[j]}),h("td",null,verdictBadge(ch)," "+NAMES[ch]),
   h("td",{cls:"expl",text:e==null?"(not in this page)":e})));}});
 return h("table",{"data-table":"explore-verdicts"},h("caption",{text:"Every verdict on "+q.checks[c].id+": "+q.checks[c].text}),
  h("thead",null,h("tr",null,h("th",{text:"model"}),h("th",{text:"setting"}),h("th",{text:"judge"}),h("th",{text:"verdict"}),h("th",{text:"explanation"}))),body);}
var drawn=false;
function route(){var parts=location.hash.replace(/^#/,"").split("/");if(parts[0]!=="explore"&&drawn)return;drawn=true;
 var m=parts[1]==="m"?parseInt(parts[2],10):null,q=parts[3]==="q"?parseInt(parts[4],10):null,c=parts[5]==="c"?parseInt(parts[6],10):null;
 if(m!=null&&!(m>=0&&m<NM))m=null;if(q!=null&&!(q>=0&&q<Q.length))q=null;if(c!=null&&(q==null||!(c>=0&&c<Q[q].checks.length)))c=null;
 var views=m==null?board():q==null?modelView(m):questionView(m,q,c);app.textContent="";views.forEach(function(v){app.appendChild(v);});
 app.setAttribute("data-view",m==null?"leaderboard":q==null?"model":"question");
 if(parts[0]==="explore")document.getElementById("explore").scrollIntoView();}
function linkTables(){document.querySelectorAll('table[data-table="leaderboard"] tbody tr, table[data-table="judge_scores"] tbody tr').forEach(function(tr){
 var td=tr.cells[0],m=td?M.indexOf(td.textContent.trim()):-1;if(m<0)return;var name=td.textContent.trim();td.textContent="";td.appendChild(link(name,mh(m)));});}
window.addEventListener("hashchange",route);route();linkTables();
})();
