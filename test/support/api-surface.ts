// The package's public surface as a host's compiler reads it: the built declarations (dist/) of each entry
// point, resolved with the TypeScript compiler API. One line per exported name with its declaration as
// written, and one per member of an exported interface or class, so a change shows as a one-line diff.
import { resolve } from 'node:path'
import ts from 'typescript'

export interface EntryPoint {
  /** the import specifier a host writes, e.g. 'apiary-relay/client' */
  specifier: string
  /** its declaration file, e.g. 'dist/client/index.d.ts' */
  declarations: string
}

export interface Surface {
  /** sorted, one line per export and per member of an exported interface or class */
  lines: string[]
  /** the exported names of each entry point */
  names: Map<string, string[]>
  /** every file the compiler loaded to resolve them, the dependencies' declarations included */
  loadedFiles: string[]
}

const printer = ts.createPrinter({ removeComments: true })
const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim()
const print = (node: ts.Node) => oneLine(printer.printNode(ts.EmitHint.Unspecified, node, node.getSourceFile()))
// declarations are printed as written, minus what every one of them carries
const stripExport = (text: string) => text.replace(/^export (declare )?(default )?/, '').replace(/^declare /, '')

export function readSurface(entries: EntryPoint[]): Surface {
  const files = entries.map((e) => resolve(e.declarations))
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  })
  const checker = program.getTypeChecker()
  const lines: string[] = []
  const names = new Map<string, string[]>()
  entries.forEach((entry, i) => {
    const source = program.getSourceFile(files[i]!)
    const module = source && checker.getSymbolAtLocation(source)
    if (!module) throw new Error(`${entry.declarations}: no declarations (run npm run build)`)
    const exported = checker.getExportsOfModule(module)
    names.set(
      entry.specifier,
      exported.map((s) => s.name),
    )
    for (const symbol of exported) lines.push(...describeExport(checker, entry.specifier, symbol))
  })
  return { lines: lines.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)), names, loadedFiles: program.getSourceFiles().map((f) => f.fileName) }
}

function describeExport(checker: ts.TypeChecker, entry: string, symbol: ts.Symbol): string[] {
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
  // a class or function exported with `export type` can't be called or constructed by a host
  const typeOnly = target.flags & ts.SymbolFlags.Value && symbol.declarations?.some(isTypeOnlyExport) ? ' (type only)' : ''
  // a space after the name sorts an owner's line before its members' (`Relay.close`) and other names (`RelayError`)
  const head = `${entry} ${symbol.name}${typeOnly}`
  return (target.declarations ?? []).flatMap((decl) => {
    if (ts.isInterfaceDeclaration(decl) || ts.isClassDeclaration(decl)) return describeOwner(head, entry, symbol.name, decl)
    if (ts.isVariableDeclaration(decl)) return [`${head} const ${print(decl)}`]
    if (ts.isTypeAliasDeclaration(decl)) return describeAlias(checker, head, decl)
    return [`${head} ${stripExport(print(decl))}`]
  })
}

/** The header (type parameters, heritage) on one line, then each public member on its own. */
function describeOwner(head: string, entry: string, name: string, decl: ts.InterfaceDeclaration | ts.ClassDeclaration): string[] {
  const keyword = ts.isClassDeclaration(decl)
    ? `${decl.modifiers?.some((m) => m.kind === ts.SyntaxKind.AbstractKeyword) ? 'abstract ' : ''}class`
    : 'interface'
  const typeParams = decl.typeParameters ? `<${decl.typeParameters.map(print).join(', ')}>` : ''
  const heritage = (decl.heritageClauses ?? []).map((h) => ` ${print(h)}`).join('')
  const members = (decl.members as ts.NodeArray<ts.ClassElement | ts.TypeElement>)
    .filter((m) => !isPrivate(m))
    .map((m) => `${entry} ${name}.${memberName(m)} ${print(m)}`)
  return [`${head} ${keyword} ${decl.name?.text ?? name}${typeParams}${heritage}`, ...members]
}

/** As written; a union computed from another type (Extract<...>) also gets its members spelled out. */
function describeAlias(checker: ts.TypeChecker, head: string, decl: ts.TypeAliasDeclaration): string[] {
  const written = `${head} ${stripExport(print(decl))}`
  const type = checker.getTypeAtLocation(decl.type)
  if (!ts.isTypeReferenceNode(decl.type) || !type.isUnion()) return [written]
  const flags = ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.InTypeAlias | ts.TypeFormatFlags.UseSingleQuotesForStringLiteralType
  // names as a host reads them, without the absolute path of this checkout; sorted, because the compiler
  // orders a union by when it first met each member, which unrelated code can change
  const members = type.types.map((t) => oneLine(checker.typeToString(t, decl, flags)).replace(/import\("[^"]*"\)\./g, '')).sort()
  return [written, `${head} resolves to ${members.join(' | ')}`]
}

function memberName(m: ts.ClassElement | ts.TypeElement): string {
  if (ts.isConstructorDeclaration(m) || ts.isConstructSignatureDeclaration(m)) return 'constructor'
  if (ts.isCallSignatureDeclaration(m)) return '(call)'
  if (ts.isIndexSignatureDeclaration(m)) return '[index]'
  return m.name ? print(m.name) : '?'
}

function isPrivate(m: ts.ClassElement | ts.TypeElement): boolean {
  if (m.name && ts.isPrivateIdentifier(m.name)) return true
  return ts.canHaveModifiers(m) && (ts.getModifiers(m) ?? []).some((x) => x.kind === ts.SyntaxKind.PrivateKeyword)
}

function isTypeOnlyExport(decl: ts.Declaration): boolean {
  return ts.isExportSpecifier(decl) && (decl.isTypeOnly || decl.parent.parent.isTypeOnly)
}
